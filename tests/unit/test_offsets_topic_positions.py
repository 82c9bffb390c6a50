"""`__consumer_offsets` in cluster mode's positions and the partition-count setting (issue 33 item 5)."""

from __future__ import annotations

import struct

import pytest

from kcoord.broker.topics.offsets_topic import OffsetsTopic
from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.persistence.codec import to_storage
from kcoord.wiring.config import parse_serve_argv
from tests.offsets_decoder import java_partition, read_batches


def test_a_cluster_shard_spans_owner_epochs_in_int32_deltas() -> None:
    """Cluster mode: a shard's lsns are `epoch << 40 | n`, so one partition's records can be 2**40
    apart; each batch keeps its offset deltas within Kafka's INT32 and the empty batch at the end
    covers the last 2**31 - 1 offsets before the high watermark."""
    view = OffsetsTopic(6, served=False)
    shard = java_partition("g1", 6)
    old = to_storage(OffsetCommitRecord("g1", "t", 0, 1, -1, "", 1))
    new = to_storage(OffsetCommitRecord("g1", "t", 1, 2, -1, "", 2))
    epoch2, epoch3 = 2 << 40, 3 << 40
    view.load_partition(shard, [(5, 1, old), (epoch2 + 1, 2, new)], epoch3 + 1)
    assert view.partition((shard + 1) % 6) is None  # another node's shard
    partition = view.partition(shard)
    assert partition is not None and partition.high_watermark == epoch3 + 1
    result = partition.read(0, 1 << 20)
    assert result is not None
    assert [r.offset for r in read_batches(result.records)] == [5, epoch2 + 1]
    last_base, last_delta = _last_batch(result.records)
    assert last_base + last_delta == epoch3 and last_delta == (1 << 31) - 1
    view.on_durable([to_storage(OffsetCommitRecord("g1", "t", 0, 3, -1, "", 3))], [epoch3 + 1])
    assert partition.high_watermark == epoch3 + 2
    view.drop_partition(shard)
    assert view.partition(shard) is None


def _last_batch(data: bytes) -> tuple[int, int]:
    """(base offset, lastOffsetDelta) of the last whole batch, read from the header by hand."""
    pos, last = 0, (-1, -1)
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        last, pos = (base, delta), pos + 12 + length
    return last


def test_the_flag_and_its_env_var_name_the_partition_count() -> None:
    assert parse_serve_argv([], env={}).offsets_topic_num_partitions == 50  # Kafka's default
    assert (
        parse_serve_argv([], env={"KCOORD_OFFSETS_TOPIC_NUM_PARTITIONS": "9"}).offsets_topic_num_partitions
        == 9
    )
    assert parse_serve_argv(["--offsets-topic-num-partitions", "3"], env={}).offsets_topic_num_partitions == 3
    with pytest.raises(SystemExit):
        parse_serve_argv(["--offsets-topic-num-partitions", "0"], env={})
