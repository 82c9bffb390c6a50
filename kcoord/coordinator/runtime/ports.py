"""The durable log as a coordinator sees it, generic over the coordinator's domain records.

`coordinator.persistence.StorageRecordLog` implements it over `storage.Log` for every tenant
(groups, transactions, topics, producer ids share one log); the unit tests use an in-memory log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

__all__ = ["OnDone", "RecordLog"]

OnDone = Callable[[BaseException | None], None]

R_contra = TypeVar("R_contra", contravariant=True)


class RecordLog(Protocol[R_contra]):
    """The durable log of records of type `R_contra`.

    Contract:
    * `append` never blocks and never calls `on_done` before it returns... except that an
      implementation MAY call it synchronously (e.g. an in-memory log); callers cope with both.
    * The records of one call are written as one atomic batch.
    * `on_done(None)` once the batch is durable (under the fsync policy); `on_done(error)` if it
      failed (the error is the storage exception). `on_done` is called exactly once per append.
    * `on_done` callbacks run in append order, on the same loop/thread as requests.
    """

    def append(self, records: Sequence[R_contra], on_done: OnDone) -> None:
        """Append `records` as one batch and report durability through `on_done`."""
        ...
