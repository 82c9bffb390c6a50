"""The partition store port: what the data plane (`kcoord/broker/topics/data.py` and the Produce, Fetch,
ListOffsets, DeleteRecords, DescribeProducers, DescribeLogDirs handlers, transaction markers, metrics)
calls on one partition and on the set of partitions a node serves.

`PartitionLog` / `PartitionLogs` (the local data directory) implement it, and in cluster mode
`coordinator.cluster`'s `PgPartitionLog` / `ClusterPartitions` (batches in PostgreSQL, issue 27).
`ensure` may answer None there: the partition exists but this node does not lead it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.producers import ProducerStateRow
from kcoord.partition_log.results import AppendResult, ReadResult
from kcoord.partition_log.validation import AppendError, DuplicateAppend, ValidatedAppend
from kcoord.protocol.record_batch import ProducedBatch
from kcoord.storage.faults import FaultPolicy

__all__ = ["PartitionStore", "PartitionStores"]


class PartitionStore(Protocol):
    topic: str
    partition: int
    config: PartitionConfig
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    leader_epoch: int
    """The epoch this node leads the partition at (partition_log/epochs.py): 0 on a single node."""

    def epoch_history(self) -> Sequence[tuple[int, int]]:
        """(leader epoch, start offset) in increasing order, the last the current epoch's
        (LeaderEpochFileCache's entries)."""
        ...

    def validate(
        self, records: bytes | ProducedBatch, now_ms: int
    ) -> ValidatedAppend | DuplicateAppend | AppendError: ...

    def append(
        self, validated: ValidatedAppend, now_ms: int | None = None
    ) -> asyncio.Future[AppendResult]: ...

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> asyncio.Future[AppendResult] | AppendError: ...

    def add_listener(self, callback: Callable[[], None]) -> None: ...

    def remove_listener(self, callback: Callable[[], None]) -> None: ...

    @property
    def first_unstable_offset(self) -> int | None: ...

    @property
    def last_stable_offset(self) -> int: ...

    def read(
        self, offset: int, max_bytes: int, isolation_level: int = ..., max_offset: int | None = None
    ) -> ReadResult | None:
        """Whole batches from the one holding `offset`, up to `max_bytes` but at least one (KIP-74);
        with `max_offset`, none after the first batch reaching it (a share fetch reads no further than
        it can acquire: kcoord/broker/share/fetch.py)."""
        ...

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None: ...

    def max_timestamp(self) -> tuple[int, int] | None: ...

    def batch_max_timestamp(self, offset: int) -> int:
        """The max timestamp of the batch holding `offset`, -1 if none (consumer lag in seconds)."""
        ...

    def has_ongoing_transaction(self, producer_id: int) -> bool: ...

    def producer_states(self) -> list[ProducerStateRow]: ...

    def remove_expired_producers(self, now_ms: int) -> None: ...

    async def move_log_start(self, offset: int) -> int: ...

    def delete_records(self, before_offset: int) -> asyncio.Future[int]: ...

    @property
    def size(self) -> int: ...

    def expired_start(self, now_ms: int) -> int | None: ...


class PartitionStores(Protocol):
    root: Path
    policy: FaultPolicy

    def get(self, topic: str, partition: int) -> PartitionStore | None: ...

    def ensure(self, topic: str, partition: int, config: PartitionConfig) -> PartitionStore | None: ...

    def partitions(self) -> Sequence[PartitionStore]: ...

    async def delete_topic(self, topic: str) -> None: ...

    def enforce_retention(self) -> None: ...

    async def close(self) -> None: ...

    # -- the test controls (kcoord/wiring/controls/): advance() settles writes, reset() and abandon()
    @property
    def pending(self) -> bool:
        """Appends submitted and not yet durable."""
        ...

    async def flush(self) -> None:
        """Until every append submitted so far has settled."""
        ...

    async def discard(self) -> None:
        """Close without making anything more durable (reset deletes the data next)."""
        ...

    def abandon(self) -> None:
        """A crash: drop what is queued, nothing more is written."""
        ...
