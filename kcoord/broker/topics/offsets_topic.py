"""`__consumer_offsets` as Kafka's internal topic: a read-only view of the coordinator log (issue 33 item 5).

Kafka's group coordinator writes its state to `__consumer_offsets`; tools (Burrow, KMinion, the
console consumer's `OffsetsMessageFormatter`, `kcat -L -t __consumer_offsets`) read it as a topic.
kcoord's coordinator state lives in its own log, so the topic here is derived from it: built from
the log when first read (its newest record per key, with its position) and then fed every write of
the coordinator log once durable (`StorageRecordLog.on_durable`). In cluster mode the same holds per
node: the shards it owns keep their newest record per key until the view is first read, and feed it at
every write from then on (kcoord/cluster/offsets_feed.py says why). The records are Kafka's
(`coordinator/persistence/offsets_topic_records.py`); each group's go to the partition
`Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`.

Offsets are the coordinator log's positions (LSNs): they only grow, survive restarts and compaction,
and are sparse, as the offsets of a compacted Kafka log are; a partition's high watermark is one past
its last record, and where the view was built from the log, the log's next position then (so it never
falls below an offset handed out before a restart). Each partition compacts itself by key as Kafka's
cleaner does (`offsets_partition.py`).

Writes are refused as Kafka refuses them on an internal topic (`ReplicaManager.appendToLocalLog`:
INVALID_TOPIC_EXCEPTION "Cannot append to internal topic"); see docs/compat.md for the admin-client
exception Kafka has and the topic deletions it allows.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence

from kcoord import storage
from kcoord.broker.topics.offsets_partition import OffsetsPartition
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry
from kcoord.coordinator.persistence.offsets_topic_records import (
    OFFSETS_TOPIC,
    MarkerRecord,
    OffsetsRecord,
    TopicEntry,
    TopicIds,
    is_group_record,
    offsets_records,
)

__all__ = [
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_ID",
    "OffsetsPartition",
    "OffsetsTopic",
    "create_internal",
    "has_partition",
    "internal_topic",
    "load_from_log",
    "topic_ids_of",
]

# A fixed id, the same on every node and across restarts (Kafka draws one when it creates the topic).
OFFSETS_TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "kcoord:" + OFFSETS_TOPIC)


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
        # The topic ids Kafka 4.3 writes into an OffsetCommitValue v4 (`offsets_topic_records.as_written`):
        # the composition root points it at the topic registry.
        self.topic_ids: TopicIds = lambda _name: None

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
        converted = offsets_records(
            [r for _, _, r in ordered], self.num_partitions, live=False, topic_ids=self.topic_ids
        )
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
        converted = offsets_records(records, self.num_partitions, live=True, topic_ids=self.topic_ids)
        for lsn, record in zip(lsns, converted, strict=True):
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


def topic_ids_of(topics: TopicRegistry) -> TopicIds:
    """The registry's topic ids by name, for `OffsetsTopic.topic_ids`."""

    def topic_id(name: str) -> uuid.UUID | None:
        found = topics.get(name)
        return None if found is None else found.topic_id

    return topic_id


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
