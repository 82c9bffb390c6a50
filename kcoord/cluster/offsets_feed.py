"""`__consumer_offsets` on a cluster node, built when first read (issue 35 item 1): the shards this
node owns feed the view (`OffsetsTopic`, kcoord/broker/topics/offsets_topic.py) only once a reader
asked for it, as a single node builds its view (`local_backends._offsets_topic`).

Why: fed eagerly, every durable commit decoded its stored value and encoded it again as Kafka 4.3
writes it, 13% of a node's CPU under a commit load (py-spy, docs/cluster.md "Cost per operation")
for a view most clusters never read. Until the first read each owned shard keeps only its newest
record per key with its lsn (a dict update per record); the first read builds every owned shard's
partition from that, as a shard loaded from its table would be (a tombstone deletes its key, as it
deletes the row), and from then on the view is fed at every write, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from kcoord import storage
from kcoord.broker.topics.offsets_topic import OffsetsTopic

__all__ = ["OffsetsFeed", "PartitionLoad"]

# (lsn, timestamp in ms, record) as OffsetsTopic.load_partition takes them
_Entry = tuple[int, int, storage.Record]
Listener = Callable[[Sequence[storage.Record], Sequence[int]], None]


class _Unbuilt:
    __slots__ = ("newest", "next_offset")

    def __init__(self, next_offset: int) -> None:
        self.newest: dict[tuple[int, bytes], _Entry] = {}
        self.next_offset = next_offset

    def add(self, records: Sequence[storage.Record], lsns: Sequence[int], now: int) -> None:
        for lsn, record in zip(lsns, records, strict=True):
            key = (record.type, record.key)
            if (held := self.newest.get(key)) is not None and held[0] > lsn:
                continue  # a late answer of an earlier owner's log: the table's newer value stays
            if record.value is None:
                self.newest.pop(key, None)
            else:
                self.newest[key] = (lsn, now, record)
            self.next_offset = max(self.next_offset, lsn + 1)


class PartitionLoad:
    """A loading shard's partition, built a record at a time while the shard replays in slices
    (kcoord/cluster/ownership.py) and handed to the feed at once by `OffsetsFeed.install`: the view
    may be built by a reader between two slices, and never sees a partition half loaded."""

    __slots__ = ("_now", "part")

    def __init__(self, next_offset: int) -> None:
        self.part = _Unbuilt(next_offset)
        self._now = time.time_ns() // 1_000_000

    def add(self, lsn: int, record: storage.Record) -> None:
        self.part.newest[record.type, record.key] = (lsn, self._now, record)


class OffsetsFeed:
    """The node's view of `num_partitions` (one per group shard), fed by the shards' logs."""

    def __init__(self, num_partitions: int) -> None:
        self.view = OffsetsTopic(num_partitions, served=False, loader=self._build)
        self._unbuilt: dict[int, _Unbuilt] | None = {}
        """Shard -> its records since it was loaded here; None once the view was built."""

    @property
    def built(self) -> bool:
        return self._unbuilt is None

    def load_partition(self, shard: int, records: Iterable[_Entry], next_offset: int) -> None:
        """The shard was loaded here: its records and the first lsn its log will write."""
        if self._unbuilt is None:
            self.view.load_partition(shard, records, next_offset)
            return
        unbuilt = self._unbuilt[shard] = _Unbuilt(next_offset)
        for lsn, timestamp, record in records:
            unbuilt.newest[record.type, record.key] = (lsn, timestamp, record)

    def install(self, shard: int, load: PartitionLoad) -> None:
        """The shard was loaded here: its partition as `load` built it."""
        if self._unbuilt is None:
            self.view.load_partition(shard, load.part.newest.values(), load.part.next_offset)
        else:
            self._unbuilt[shard] = load.part

    def drop_partition(self, shard: int) -> None:
        if self._unbuilt is None:
            self.view.drop_partition(shard)
        else:
            self._unbuilt.pop(shard, None)

    def listener(self, shard: int) -> Listener:
        """The shard log's `on_durable`: each committed append with its lsns."""

        def durable(records: Sequence[storage.Record], lsns: Sequence[int]) -> None:
            if self._unbuilt is None:
                self.view.on_durable(records, lsns)
            elif (unbuilt := self._unbuilt.get(shard)) is not None:
                unbuilt.add(records, lsns, time.time_ns() // 1_000_000)

        return durable

    def _build(self, view: OffsetsTopic) -> None:
        """The first read: every owned shard's partition from its newest records."""
        unbuilt, self._unbuilt = self._unbuilt or {}, None
        for shard, state in unbuilt.items():
            view.load_partition(shard, state.newest.values(), state.next_offset)
