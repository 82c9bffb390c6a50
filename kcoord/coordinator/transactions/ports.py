"""The transaction coordinator's ports: markers to the partitions, producer ids, the log.

The log is the shared runtime's `RecordLog` over `TransactionRecord` (coordinator.runtime.ports).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from kcoord.coordinator.runtime.ports import RecordLog
from kcoord.coordinator.transactions.records import TransactionRecord

__all__ = ["MarkerWriter", "ProducerIdAllocator", "TransactionLog"]

TransactionLog = RecordLog[TransactionRecord]


class MarkerWriter(Protocol):
    """Writes a transaction's COMMIT/ABORT markers to its partitions (Kafka's
    TransactionMarkerChannelManager + WriteTxnMarkers): `__consumer_offsets` partitions to the group
    coordinator, every other partition a control batch in its log. `done(None)` once every marker
    is durable; `done(error)` if some failed (the coordinator retries the whole call after
    `marker_retry_backoff_ms`; markers are idempotent for a partition that already has one)."""

    def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Sequence[tuple[str, int]],
        done: Callable[[BaseException | None], None],
    ) -> None: ...


class ProducerIdAllocator(Protocol):
    """`coordinator.metadata.producer_ids.ProducerIds` satisfies it: `done(producer_id, None)` or
    `done(None, error)`."""

    def allocate(self, done: Callable[[int | None, BaseException | None], None]) -> None: ...
