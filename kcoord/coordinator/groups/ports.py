"""The group logic's port to the durable log: the shared runtime's `RecordLog`
(`coordinator.runtime.ports`) over the group's domain records.

`coordinator.persistence.StorageRecordLog` implements it over `storage.Log` (mapping the domain
records of `coordinator.groups.records` to `storage.Record` bytes with the `__consumer_offsets`
schemas); the unit tests use an in-memory log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kcoord.coordinator.groups.records import LogRecord
from kcoord.coordinator.runtime import ports as _shared
from kcoord.coordinator.runtime.ports import OnDone

__all__ = ["LogRecord", "OnDone", "RecordLog"]


class RecordLog(_shared.RecordLog[LogRecord], Protocol):
    """The durable log, as the group logic sees it (the contract is `coordinator.runtime.RecordLog`'s)."""

    def append(self, records: Sequence[LogRecord], on_done: OnDone) -> None:
        """Append `records` as one batch and report durability through `on_done`."""
        ...
