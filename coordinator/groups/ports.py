"""The group logic's port to the durable log, in the package that consumes it.

`coordinator.persistence.StorageRecordLog` implements it over `storage.Log` (mapping the domain
records of `coordinator.groups.records` to `storage.Record` bytes with the `__consumer_offsets`
schemas); the unit tests use an in-memory log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from coordinator.groups.records import LogRecord

__all__ = ["LogRecord", "OnDone", "RecordLog"]

OnDone = Callable[[BaseException | None], None]


class RecordLog(Protocol):
    """The durable log, as the group logic sees it.

    Contract:
    * `append` never blocks and never calls `on_done` before it returns... except that an
      implementation MAY call it synchronously (e.g. an in-memory log); callers cope with both.
    * The records of one call are written as one atomic batch.
    * `on_done(None)` once the batch is durable (under the fsync policy); `on_done(error)` if it
      failed (the error is the storage exception). `on_done` is called exactly once per append.
    * `on_done` callbacks run in append order, on the same loop/thread as requests.
    """

    def append(self, records: Sequence[LogRecord], on_done: OnDone) -> None:
        """Append `records` as one batch and report durability through `on_done`."""
        ...
