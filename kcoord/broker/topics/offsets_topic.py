"""`__consumer_offsets` as Kafka's internal topic: a read-only view of the coordinator log (issue 33 item 5).

Kafka's group coordinator writes its state to `__consumer_offsets`; tools (Burrow, KMinion, the
console consumer's `OffsetsMessageFormatter`, `kcat -L -t __consumer_offsets`) read it as a topic.
kcoord's coordinator state lives in its own log, so the topic here is derived from it: built from
the recovered log at startup (its newest record per key, with its position) and fed every write of
the coordinator log once durable (`StorageRecordLog.on_durable`). The records are Kafka's
(`coordinator/persistence/offsets_topic_records.py`); each group's go to the partition
`Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`.

Offsets are the coordinator log's positions (LSNs): they only grow, survive restarts and compaction,
and are sparse, as the offsets of a compacted Kafka log are; a partition's high watermark is one past
its last record. The view compacts itself by key as Kafka's cleaner does (a key's newest record
stays; transactional records and markers stay while their transaction could be read).

Writes are refused as Kafka refuses them on an internal topic (`ReplicaManager.appendToLocalLog`:
INVALID_TOPIC_EXCEPTION "Cannot append to internal topic"); see docs/compat.md for the admin-client
exception Kafka has and the topic deletions it allows.
"""

from __future__ import annotations

import asyncio
import bisect
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

from kcoord import storage
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry
from kcoord.coordinator.persistence.offsets_topic_records import (
    OFFSETS_TOPIC,
    MarkerRecord,
    OffsetsRecord,
    TopicEntry,
    encode_batch,
    encode_empty_batch,
    is_group_record,
    marker_key,
    marker_value,
    offsets_records,
)
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.producers import ProducerStateRow
from kcoord.partition_log.results import READ_COMMITTED, AppendResult, ReadResult
from kcoord.partition_log.validation import AppendError, DuplicateAppend, ValidatedAppend
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import ProducedBatch

__all__ = [
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_ID",
    "OffsetsPartition",
    "OffsetsTopic",
    "create_internal",
    "has_partition",
    "internal_topic",
    "load_from_log",
]

# A fixed id, the same on every node and across restarts (Kafka draws one when it creates the topic).
OFFSETS_TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "kcoord:" + OFFSETS_TOPIC)
_BATCH_RECORDS = 500  # plain records per batch on the wire
# A batch's lastOffsetDelta is an INT32: records further apart (cluster mode's lsns jump by 2**40 at an
# owner's new epoch) go in separate batches, and an empty batch covers at most this much of a gap.
_MAX_DELTA = (1 << 31) - 1


def _refused() -> AppendError:
    return AppendError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {OFFSETS_TOPIC}")


class OffsetsPartition:
    """One partition of the view: what Fetch, ListOffsets and the Produce/DeleteRecords checks call
    (the `PartitionStore` port); every write is refused."""

    def __init__(self, partition: int) -> None:
        self.topic = OFFSETS_TOPIC
        self.partition = partition
        self.config = PartitionConfig()
        self.log_start_offset = 0
        self.high_watermark = 0
        self.log_end_offset = 0  # always the high watermark: the view is durable when it is told
        self._entries: list[TopicEntry] = []
        self._offsets: list[int] = []  # the entries' offsets, for bisect
        self._newest: dict[bytes, int] = {}  # key -> offset of its newest plain record
        self._open: dict[int, tuple[int, int]] = {}  # producer -> (first offset, epoch) of its open txn
        self._aborted: list[tuple[int, int, int]] = []  # (producer, first offset, marker offset)
        self._listeners: list[Callable[[], None]] = []

    # -- the view's own writes ------------------------------------------------------------------------
    def add(self, entry: TopicEntry) -> None:
        self._entries.append(entry)
        self._offsets.append(entry.offset)
        self.high_watermark = self.log_end_offset = entry.offset + 1
        if entry.producer_id >= 0 and not entry.control:
            self._open.setdefault(entry.producer_id, (entry.offset, entry.producer_epoch))
        elif not entry.control:
            self._newest[entry.key] = entry.offset

    def end_transaction(self, producer_id: int, commit: bool, offset: int, timestamp: int) -> None:
        """The marker of the producer's open transaction here (none open: nothing to mark)."""
        opened = self._open.pop(producer_id, None)
        if opened is None:
            return
        first, epoch = opened
        self.add(TopicEntry(offset, timestamp, marker_key(commit), marker_value(), producer_id, epoch, True))
        if not commit:
            self._aborted.append((producer_id, first, offset))

    def wake(self) -> None:
        for callback in list(self._listeners):
            callback()

    def compact(self) -> None:
        """Kafka's cleaner: drop a plain record a newer one of its key replaced; a finished
        transaction's records and marker go once a plain record of the key replaced them."""
        if len(self._entries) < 2 * len(self._newest) + 64:
            return
        lso = self.last_stable_offset
        kept = [e for e in self._entries if self._keep(e, lso)]
        self._entries = kept
        self._offsets = [e.offset for e in kept]
        present = set(self._offsets)
        self._aborted = [a for a in self._aborted if a[2] in present]

    def _keep(self, entry: TopicEntry, lso: int) -> bool:
        if entry.offset >= lso:
            return True
        if entry.control:
            return any(a[2] == entry.offset for a in self._aborted)
        newest = self._newest.get(entry.key)
        return newest is None or newest <= entry.offset

    # -- reads ----------------------------------------------------------------------------------------
    @property
    def first_unstable_offset(self) -> int | None:
        return min((first for first, _ in self._open.values()), default=None)

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset
        return self.high_watermark if first is None else first

    def read(self, offset: int, max_bytes: int, isolation_level: int = 0) -> ReadResult | None:
        """Whole batches from `offset` up to the high watermark (the last stable offset read
        committed), at least one batch whatever `max_bytes` (KIP-74); None: out of range."""
        if offset < self.log_start_offset or offset > self.high_watermark:
            return None
        end = self.last_stable_offset if isolation_level == READ_COMMITTED else self.high_watermark
        start = bisect.bisect_left(self._offsets, offset)
        stop = bisect.bisect_left(self._offsets, end)
        chunks: list[bytes] = []
        size, index = 0, start
        while index < stop and (not chunks or size < max_bytes):
            run = self._run(index, stop)
            chunks.append(encode_batch(self._entries[index : index + run]))
            size += len(chunks[-1])
            index += run
        if index == stop and (tail := self._tail_start(index, offset)) < end:
            # Records the log dropped left no record before `end` (a restart ends every partition at the
            # log's next position): an empty batch takes the reader's position there, as Kafka's cleaned
            # batches keep their last offset.
            timestamp = self._entries[index - 1].timestamp if index else 0
            chunks.append(encode_empty_batch(max(tail, end - 1 - _MAX_DELTA), end - 1, timestamp))
        aborted = None
        if isolation_level == READ_COMMITTED:
            read_end = self._offsets[index - 1] if index > start else offset
            aborted = [(p, first) for p, first, last in self._aborted if last >= offset and first <= read_end]
        hw, lso = self.high_watermark, self.last_stable_offset
        return ReadResult(b"".join(chunks), hw, self.log_start_offset, lso, aborted)

    def _tail_start(self, index: int, offset: int) -> int:
        """Where the gap after the last record read (or from `offset`, none read) begins."""
        return max(offset, self._offsets[index - 1] + 1) if index else offset

    def _run(self, index: int, stop: int) -> int:
        """How many entries from `index` share one batch: one producer's, or plain ones."""
        first = self._entries[index]
        if first.control:
            return 1
        run = 1
        while index + run < stop and run < _BATCH_RECORDS:
            nxt = self._entries[index + run]
            if nxt.control or nxt.producer_id != first.producer_id or nxt.offset - first.offset > _MAX_DELTA:
                break
            run += 1
        return run

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for entry in self._entries:
            if entry.timestamp >= timestamp and not entry.control:
                return entry.offset, entry.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best = max(self._entries, key=lambda e: e.timestamp, default=None)
        return None if best is None else (best.offset, best.timestamp)

    def batch_max_timestamp(self, offset: int) -> int:
        index = bisect.bisect_left(self._offsets, offset)
        return self._entries[index].timestamp if index < len(self._entries) else -1

    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    # -- refused writes (the PartitionStore port) -----------------------------------------------------
    def validate(
        self, records: bytes | ProducedBatch, now_ms: int
    ) -> ValidatedAppend | DuplicateAppend | AppendError:
        return _refused()

    def append(self, validated: ValidatedAppend, now_ms: int | None = None) -> asyncio.Future[AppendResult]:
        raise AssertionError("validate refuses every append to __consumer_offsets")

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> asyncio.Future[AppendResult] | AppendError:
        return _refused()

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return producer_id in self._open

    def producer_states(self) -> list[ProducerStateRow]:
        return []

    def remove_expired_producers(self, now_ms: int) -> None:
        return None

    async def move_log_start(self, offset: int) -> int:
        return self.log_start_offset

    def delete_records(self, before_offset: int) -> asyncio.Future[int]:
        raise AssertionError("DeleteRecords refuses __consumer_offsets before it reaches a partition")

    @property
    def size(self) -> int:
        return sum(len(e.key) + len(e.value or b"") for e in self._entries)

    def expired_start(self, now_ms: int) -> int | None:
        return None


class OffsetsTopic:
    """Every partition of the view, fed by the coordinator log. A single node serves them all; a
    cluster node only those of the shards it owns (`load_partition` / `drop_partition`)."""

    def __init__(
        self,
        num_partitions: int,
        *,
        served: bool = True,
        loader: Callable[[OffsetsTopic], None] | None = None,
        exists: bool = True,
    ) -> None:
        self.num_partitions = num_partitions
        # Kafka creates the topic when a group first needs it (FindCoordinator, or a Metadata request
        # naming it that may auto-create): here when the log first holds a group's record (`notice`),
        # or such a Metadata / CreateTopics request names it. Until then it is not listed.
        self.exists = exists
        self.partitions: list[OffsetsPartition | None] = [
            OffsetsPartition(p) if served else None for p in range(num_partitions)
        ]
        # Builds the view when it is first read: until then the write path pays nothing for it.
        self._loader = loader

    @property
    def record(self) -> TopicRecord:
        """The topic as Metadata lists it (compacted, as Kafka creates it: GroupCoordinator's
        offsetsTopicConfigs)."""
        return TopicRecord(
            OFFSETS_TOPIC, OFFSETS_TOPIC_ID, self.num_partitions, (("cleanup.policy", "compact"),)
        )

    def partition(self, index: int) -> OffsetsPartition | None:
        """The partition if this node serves it (None: out of range, or another node's shard)."""
        if (loader := self._loader) is not None:
            self._loader = None
            loader(self)
        return self.partitions[index] if 0 <= index < self.num_partitions else None

    def notice(self, records: Sequence[storage.Record]) -> bool:
        """True (and the topic exists from now on) if a write holds a group's record."""
        if not self.exists and any(is_group_record(r) for r in records):
            self.exists = True
        return self.exists

    def load(self, records: Iterable[tuple[int, int, storage.Record]], next_offset: int) -> None:
        """Startup: the recovered log's live records as (lsn, timestamp, record), in any order, and
        the log's next LSN. Every partition ends there: what the log dropped since a reader read it
        (a replaced record, a tombstone the snapshot left out, a partition's last record among them)
        never moves a high watermark back below a position a reader committed."""
        self._fill(self.partitions, records, next_offset)

    def load_partition(
        self, index: int, records: Iterable[tuple[int, int, storage.Record]], next_offset: int
    ) -> None:
        """Cluster mode: the shard `index` was loaded here (its records, its log's next position)."""
        fresh: list[OffsetsPartition | None] = [None] * self.num_partitions
        fresh[index] = OffsetsPartition(index)
        self._fill(fresh, records, next_offset)
        self.partitions[index] = fresh[index]

    def drop_partition(self, index: int) -> None:
        """Cluster mode: the shard went to another node; parked fetches there answer at their deadline."""
        self.partitions[index] = None

    def _fill(
        self,
        partitions: list[OffsetsPartition | None],
        records: Iterable[tuple[int, int, storage.Record]],
        next_offset: int,
    ) -> None:
        ordered = sorted(records, key=lambda r: r[0])
        converted = offsets_records([r for _, _, r in ordered], self.num_partitions, live=False)
        for (lsn, timestamp, _), record in zip(ordered, converted, strict=True):
            if isinstance(record, OffsetsRecord) and (partition := partitions[record.partition]) is not None:
                partition.add(_entry(record, lsn, timestamp))
        for partition in partitions:
            if partition is not None:
                partition.high_watermark = partition.log_end_offset = max(
                    partition.high_watermark, next_offset
                )

    def on_durable(
        self, records: Sequence[storage.Record], lsns: Sequence[int], timestamp: int | None = None
    ) -> None:
        """A coordinator-log write is durable: its group records join their partitions at their LSNs."""
        now = time.time_ns() // 1_000_000 if timestamp is None else timestamp
        touched: list[OffsetsPartition] = []
        for lsn, record in zip(lsns, offsets_records(records, self.num_partitions, live=True), strict=True):
            if record is None or (partition := self.partitions[record.partition]) is None:
                continue
            if lsn < partition.high_watermark:  # durable when the view was built: read from the log then
                continue
            if partition not in touched:
                touched.append(partition)
            if isinstance(record, MarkerRecord):
                partition.end_transaction(record.producer_id, record.commit, lsn, now)
            else:
                partition.add(_entry(record, lsn, now))
        for partition in touched:
            partition.compact()
            partition.wake()


def _entry(record: OffsetsRecord, lsn: int, timestamp: int) -> TopicEntry:
    return TopicEntry(lsn, timestamp, record.key, record.value, record.producer_id, record.producer_epoch)


def load_from_log(view: OffsetsTopic, log: storage.Log, floor: int) -> None:
    """A single node's view from its coordinator log: the log's newest record per key (what recovery
    and compaction left), every partition ending at the first position no durable write holds yet,
    and never below `floor` (the log's next position when it was opened, before any write)."""
    keydir = log.keydir
    durable_end = max((entry.lsn for entry in keydir.values()), default=-1) + 1
    live = ((e.lsn, e.timestamp_ms, storage.Record(t, k, e.value)) for (t, k), e in keydir.items())
    view.load(live, max(floor, durable_end))


def internal_topic(
    offsets: OffsetsTopic | None, name: str | None = None, topic_id: uuid.UUID | None = None
) -> TopicRecord | None:
    """The view's topic when it is served, exists and `name` (or `topic_id`) names it; None otherwise
    (the topic registry's topics are looked up there)."""
    if offsets is None or not offsets.exists or (name != OFFSETS_TOPIC and topic_id != OFFSETS_TOPIC_ID):
        return None
    return offsets.record


def create_internal(offsets: OffsetsTopic | None, name: str) -> bool:
    """A request that may create topics names the internal one (Kafka: `KafkaApis.getTopicMetadata`'s
    internal-topic creation, or CreateTopics): it exists from now on. False: not the internal topic."""
    if offsets is None or name != OFFSETS_TOPIC:
        return False
    offsets.exists = True
    return True


def has_partition(topics: TopicRegistry, offsets: OffsetsTopic | None, name: str, index: int) -> bool:
    """The registry's `has_partition`, knowing `__consumer_offsets` too (a consumer may commit its
    position in the internal topic, as Kafka's KafkaApis finds it in its metadata cache)."""
    if offsets is not None and name == OFFSETS_TOPIC:
        return offsets.exists and 0 <= index < offsets.num_partitions
    return topics.has_partition(name, index)
