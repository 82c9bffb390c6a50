"""`SharePartitions`: the share-partition tenant, one per node, every (group, topic id, partition).

Kafka splits this between the broker's SharePartition (the in-flight window, acquisition, locks,
acknowledgement; `core/src/main/java/kafka/server/share/SharePartition.java`) and the share
coordinator (durable state; `share-coordinator/.../ShareCoordinatorShard.java`). On one node they are
one tenant of the coordinator log: acquisition stays in memory (as Kafka: acquire persists nothing),
acknowledge, release, lock expiry, reset and delete write ShareSnapshot/ShareUpdate records through
the tenant's `CoordinatorRuntime`, and replay of those records rebuilds the durable state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from uuid import UUID

from kcoord.coordinator.runtime import Clock, CoordinatorRuntime, KeyedTimers, RecordLog, ShardPhases
from kcoord.coordinator.share_partitions.model import (
    AcquiredRange,
    LogBounds,
    PartitionAnswer,
    SharePartitionView,
    ShareSettings,
)
from kcoord.coordinator.share_partitions.records import ShareRecord
from kcoord.protocol.errors import ErrorCode

__all__ = ["SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT", "SharePartitions"]

SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500
"""share.coordinator.snapshot.update.records.per.snapshot (ShareCoordinatorConfig)."""

ChangeListener = Callable[[str, UUID, int], None]


class SharePartitions:
    """The share partitions of a node. Pure: time is the `Clock`, lock timers the `KeyedTimers`,
    every durable change a `Write` through `runtime` (whose `apply` is the replay path)."""

    def __init__(
        self,
        log: RecordLog[ShareRecord],
        clock: Clock,
        timers: KeyedTimers,
        *,
        phases: ShardPhases | None = None,
        snapshot_every: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT,
    ) -> None:
        self.runtime: CoordinatorRuntime[ShareRecord] = CoordinatorRuntime(log, phases)
        self.runtime.apply = self.apply
        self._clock = clock
        self._timers = timers
        self._snapshot_every = snapshot_every

    def apply(self, record: ShareRecord) -> None:
        """Replay one record into the durable state (recovery and every live write once durable)."""
        raise NotImplementedError

    def next_fetch_offset(
        self, group_id: str, topic_id: UUID, partition: int, settings: ShareSettings, log_bounds: LogBounds
    ) -> int | None:
        """Where the next fetch of this share partition reads from: the first AVAILABLE offset in the
        window, else the end of the window (SharePartition.nextFetchOffset). Initialises the share
        partition on first use (its start offset from `settings.auto_offset_reset` against
        `log_bounds`). None while the state loads or when the in-flight window is full
        (`partition_max_record_locks`): nothing may be acquired now."""
        raise NotImplementedError

    def acquire(
        self,
        group_id: str,
        member_id: str,
        topic_id: UUID,
        partition: int,
        settings: ShareSettings,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        batch_size: int,
        strict: bool,
        skip: Callable[[int], bool] | None = None,
    ) -> list[AcquiredRange]:
        """Acquire for `member_id` the AVAILABLE records of `batches` ((base offset, last offset) as
        read from the log, ascending) up to `max_records` (SharePartition.acquire): each acquired
        record's delivery count goes up by one and its acquisition lock starts
        (`record_lock_duration_ms`). Whole batches are acquired unless `strict` (ShareFetch v2's
        record_limit mode) or a batch is already split per offset. `skip(offset)` (read_committed)
        is true for offsets of aborted transactions and control markers: they are ARCHIVED, never
        acquired. Persists nothing. Returns the acquired ranges, ascending; [] when nothing is."""
        raise NotImplementedError

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic_id: UUID,
        partition: int,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        settings: ShareSettings,
        answer: Callable[[ErrorCode], None],
    ) -> None:
        """Acknowledge (first offset, last offset, acknowledge types) batches: one type for the whole
        batch or one per offset; 0 gap, 1 accept, 2 release, 3 reject, 4 renew
        (SharePartition.acknowledge). `answer(NONE)` once the new state is durable;
        INVALID_RECORD_STATE (nothing changed) when a record is not ACQUIRED by `member_id`,
        INVALID_REQUEST for a malformed batch."""
        raise NotImplementedError

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left the group: every record it holds is released (AVAILABLE again, or ARCHIVED at
        the delivery count limit), durably (SharePartition.releaseAcquiredRecords)."""
        raise NotImplementedError

    def describe(self, group_id: str, topic_id: UUID, partition: int) -> SharePartitionView | None:
        """The share partition as it is now, or None when it has no state."""
        raise NotImplementedError

    def start_offset(self, group_id: str, topic_id: UUID, partition: int) -> int | None:
        """The share partition's start offset (SPSO), None when it has no state
        (DescribeShareGroupOffsets answers -1 for that)."""
        raise NotImplementedError

    def reset(self, group_id: str, offsets: Mapping[tuple[UUID, int], int], answer: PartitionAnswer) -> None:
        """AlterShareGroupOffsets: each (topic id, partition) starts again at its offset with a new state
        epoch and no in-flight records (the caller checked the group is empty). Answers once durable."""
        raise NotImplementedError

    def delete(
        self, group_id: str, partitions: Iterable[tuple[UUID, int]] | None, answer: PartitionAnswer
    ) -> None:
        """Forget the state of the given share partitions of the group, or of all of them when
        `partitions` is None (DeleteShareGroupOffsets / DeleteGroups), with tombstones. Answers once
        durable; a partition without state answers NONE."""
        raise NotImplementedError

    def expire_locks_now(self, group_id: str | None = None) -> int:
        """Test control: expire every acquisition lock (of `group_id`, or of every group) now, as if its
        timer had fired. Returns how many records were released."""
        raise NotImplementedError

    def on_change(self, listener: ChangeListener) -> None:
        """Call `listener(group_id, topic_id, partition)` whenever records of a share partition become
        AVAILABLE again (release, lock expiry, reset): parked ShareFetches may now acquire them."""
        raise NotImplementedError
