"""`__consumer_offsets` in cluster mode (issue 33 item 5): partition N is group shard N, led by the
shard's owner, which serves its records at the shard log's lsns; after a failover the new owner serves
the same records at the same offsets, and its high watermark never falls below the old one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cluster.nodes import Node, commit, init_cluster, nodes, owner_of, rpc, until
from tests.offsets_decoder import java_partition, read_batches, read_key
from tests.server.wire import connect, create_topic

TOPIC = "__consumer_offsets"
SHARDS = 6
NOT_LEADER_OR_FOLLOWER = 6


def _partitions(node: Node) -> list[dict[str, Any]] | None:
    """The topic's partitions in `node`'s Metadata once every one has a leader."""
    try:
        answer = rpc(node.address, 3, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False})
    except OSError:
        return None
    (topic,) = answer["topics"]
    assert topic["error_code"] == 0 and topic["is_internal"] is True
    parts: list[dict[str, Any]] = topic["partitions"]
    return parts if all(p["leader_id"] >= 0 for p in parts) else None


def _fetch(node: Node, partition: int) -> dict[str, Any]:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    return rpc(node.address, 1, 12, body)["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def _commits(answer: dict[str, Any], group: str) -> list[tuple[int, bytes | None]]:
    return [
        (r.offset, r.value)
        for r in read_batches(answer["records"])
        if r.key is not None and read_key(r.key) == (1, {"group": group, "topic": "t", "partition": 0})
    ]


def _commit_through_owner(cluster: list[Node], group: str) -> int | None:
    """The owner's node id once it acknowledged a commit (shards move while the second node joins)."""
    owner = owner_of(cluster[0], group)
    node = next((n for n in cluster if n.node_id == owner), None)
    return owner if node is not None and commit(node.address, group, "t", 42) == 0 else None


def test_the_shard_owner_leads_its_partition_and_a_failover_keeps_the_offsets(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn, num_shards=SHARDS)
    with nodes(tmp_path, cluster_dsn, [1, 2], 1500) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        group = "offsets-view-group"
        shard = java_partition(group, SHARDS)
        owner = until(
            lambda: _commit_through_owner(cluster, group), 30, "the group's owner acknowledges a commit"
        )
        parts = until(lambda: _partitions(cluster[0]), 30, "every offsets partition has a leader")
        assert [p["partition_index"] for p in parts] == list(range(SHARDS))
        assert parts[shard]["leader_id"] == owner  # the partition's leader is the group's coordinator
        leader = next(n for n in cluster if n.node_id == owner)
        other = next(n for n in cluster if n.node_id != owner)

        served = _fetch(leader, shard)
        assert served["error_code"] == 0
        (committed,) = _commits(served, group)
        assert committed[0] < served["high_watermark"]
        assert _fetch(other, shard)["error_code"] == NOT_LEADER_OR_FOLLOWER

        leader.kill()  # the other node takes the shard over when the lease runs out
        until(lambda: owner_of(other, group) == other.node_id or None, 30, "the survivor owns the shard")
        after = until(
            lambda: ((a := _fetch(other, shard))["error_code"] == 0 and a) or None, 30, "served again"
        )
        assert _commits(after, group) == [committed]  # the same record at the same offset
        assert after["high_watermark"] >= served["high_watermark"]
