"""`OffsetsFeed`: a cluster node's `__consumer_offsets` view built when first read. Until then the
shards' writes are only remembered (newest per key); the view built at the first read serves what
an eagerly fed view serves for the same writes, and from then on every write is fed at once."""

from __future__ import annotations

from collections.abc import Sequence

from kcoord import storage
from kcoord.broker.topics.offsets_topic import OffsetsTopic
from kcoord.cluster.offsets_feed import OffsetsFeed
from kcoord.coordinator.groups.records import OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.persistence.codec import to_storage
from tests.offsets_decoder import java_partition, read_batches

SHARDS = 6
EPOCH = 3 << 40


def commit(group: str, partition: int, offset: int) -> storage.Record:
    return to_storage(OffsetCommitRecord(group, "t", partition, offset, -1, "", 1_700_000_000_000))


def offsets_in(view: OffsetsTopic, shard: int) -> tuple[list[tuple[int, bytes | None]], int]:
    """(offset, value) of every record the view serves for the shard, and its high watermark."""
    partition = view.partition(shard)
    assert partition is not None
    read = partition.read(0, 1 << 30)
    assert read is not None
    return [(r.offset, r.value) for r in read_batches(read.records)], partition.high_watermark


def writes(group: str) -> list[tuple[Sequence[storage.Record], Sequence[int]]]:
    """Commits of two partitions, one overwritten, one deleted by a tombstone, as a log numbers them."""
    tombstone = to_storage(OffsetTombstone(group, "t", 1))
    return [
        ([commit(group, 0, 1), commit(group, 1, 1)], [EPOCH + 1, EPOCH + 2]),
        ([commit(group, 0, 2)], [EPOCH + 3]),
        ([tombstone, commit(group, 2, 5)], [EPOCH + 4, EPOCH + 5]),
    ]


def test_the_view_built_at_the_first_read_serves_what_an_eagerly_fed_one_does() -> None:
    group = "feed-group"
    shard = java_partition(group, SHARDS)
    loaded = [(5, 1_600_000_000_000, commit(group, 3, 9))]  # from the table, an earlier epoch
    feed = OffsetsFeed(SHARDS)
    feed.load_partition(shard, loaded, EPOCH + 1)
    eager = OffsetsTopic(SHARDS, served=False)
    eager.load_partition(shard, loaded, EPOCH + 1)
    durable = feed.listener(shard)
    for records, lsns in writes(group):
        durable(records, lsns)
        eager.on_durable(records, lsns)
    assert not feed.built and all(p is None for p in feed.view.partitions)  # nothing paid yet

    served, high_watermark = offsets_in(feed.view, shard)
    assert feed.built
    assert [o for o, _ in served] == [5, EPOCH + 3, EPOCH + 5]  # newest per key; the tombstoned key gone
    assert high_watermark == EPOCH + 6
    eager_served, eager_high = offsets_in(eager, shard)
    assert eager_high == high_watermark
    # the same records at the same offsets, compacted by key (the eager view still holds the
    # replaced ones and the tombstone: compaction may run at any time on a compacted topic)
    assert set(served) <= set(eager_served) and len(eager_served) == 6

    durable([commit(group, 0, 3)], [EPOCH + 6])  # built: fed at once
    assert offsets_in(feed.view, shard)[0][-1][0] == EPOCH + 6


def test_shards_loaded_dropped_and_late_answers_before_the_first_read() -> None:
    group = "feed-group"
    shard = java_partition(group, SHARDS)
    feed = OffsetsFeed(SHARDS)
    feed.load_partition(shard, [], 1 << 40 | 1)
    old_owner = feed.listener(shard)
    feed.drop_partition(shard)
    feed.load_partition(shard, [(EPOCH + 1, 1, commit(group, 0, 7))], EPOCH + 2)  # loaded again, later epoch
    old_owner([commit(group, 0, 6)], [(1 << 40) + 1])  # the earlier log's late answer: older than the table
    served, high_watermark = offsets_in(feed.view, shard)
    assert [offset for offset, _ in served] == [EPOCH + 1] and high_watermark == EPOCH + 2
    other = (shard + 1) % SHARDS
    assert feed.view.partition(other) is None  # not owned here
    feed.load_partition(other, [], EPOCH + 1)  # built: a shard loaded now is served at once
    assert offsets_in(feed.view, other) == ([], EPOCH + 1)
    feed.drop_partition(other)
    assert feed.view.partition(other) is None
