"""KIP-951 in cluster mode: a Produce (v10+) or Fetch (v16+) sent to a node that does not lead the
partition is answered NOT_LEADER_OR_FOLLOWER with the leader's id and epoch in `current_leader` and
the leader's endpoint in `node_endpoints`, as KafkaApis.getCurrentLeader fills them, so a client goes
straight to the leader; older versions carry neither."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.cluster.nodes import Node, init_cluster, nodes, rpc, until
from tests.cluster.test_partition_nodes import PARTITIONS, TOPIC, TTL_MS, agreed_leaders
from tests.server.order_wire import metadata
from tests.server.wire import connect, create_topic

NOT_LEADER_OR_FOLLOWER = 6


def _batch() -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, int(time.time() * 1000), b"k", b"v", [])
    return bytes(builder.build())


def _produce(node: Node, partition: int, version: int) -> dict[str, Any]:
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": _batch()}]}],
    }  # fmt: skip
    return rpc(node.address, 0, version, body)


def _share_fetch(node: Node, partition: int, topic_id: object) -> dict[str, Any]:
    """ShareFetch v1 opening a share session on one partition (no wait)."""
    body = {
        "group_id": "hints", "member_id": "m-1", "share_session_epoch": 0, "max_wait_ms": 0, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": partition,
                                                          "acknowledgement_batches": []}]}],
    }  # fmt: skip
    return rpc(node.address, 78, 1, body)


def _fetch(node: Node, partition: int, version: int, topic_id: object) -> dict[str, Any]:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                    "fetch_offset": 0, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    return rpc(node.address, 1, version, body)


def test_not_leader_answers_name_the_leader_and_its_endpoint(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        led = agreed_leaders(cluster)
        partition, leader = next(iter(led.items()))
        owner = next(n for n in cluster if n.node_id == leader)
        other = next(n for n in cluster if n.node_id != leader)

        def seen_epoch() -> tuple[dict[str, Any], int] | None:
            # `other` names the leader as soon as placement does, its lease epoch once its poll has seen
            # the lease row (-1 before: one poll stale, placement.leader_epoch); the hints carry the epoch
            (found,) = rpc(other.address, *metadata(TOPIC))["topics"]
            epoch = next(p["leader_epoch"] for p in found["partitions"] if p["partition_index"] == partition)
            return (found, epoch) if epoch >= 0 else None

        found, epoch = until(seen_epoch, 30, "the other node's Metadata has the leader's epoch", step=0.1)
        expected_leader = {"leader_id": leader, "leader_epoch": epoch}
        endpoint = {"node_id": leader, "host": owner.address[0], "port": owner.address[1]}

        produced = _produce(other, partition, 10)
        answer = produced["responses"][0]["partition_responses"][0]
        assert answer["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert answer["current_leader"] == expected_leader, answer
        assert [{k: e[k] for k in endpoint} for e in produced["node_endpoints"]] == [endpoint]

        fetched = _fetch(other, partition, 16, found["topic_id"])
        answer = fetched["responses"][0]["partitions"][0]
        assert answer["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert answer["current_leader"] == expected_leader, answer
        assert [{k: e[k] for k in endpoint} for e in fetched["node_endpoints"]] == [endpoint]

        # Versions before the fields: the error alone (the decoder fills the defaults).
        old = _produce(other, partition, 9)["responses"][0]["partition_responses"][0]
        assert old["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert old.get("current_leader") in (None, {"leader_id": -1, "leader_epoch": -1})
        # Share groups are served in cluster mode (issue 34): ShareFetch names the leader too.
        versions = rpc(other.address, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
        advertised = {int(k["api_key"]) for k in versions["api_keys"]}
        assert {1, 76, 77, 78, 79, 90, 91, 92} <= advertised, sorted(advertised)
        shared = _share_fetch(other, partition, found["topic_id"])
        answer = shared["responses"][0]["partitions"][0]
        assert answer["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert answer["current_leader"] == expected_leader, answer
        assert [{k: e[k] for k in endpoint} for e in shared["node_endpoints"]] == [endpoint]
        # The leader itself takes it, with no hint.
        ok = _produce(owner, partition, 10)
        assert ok["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert not ok.get("node_endpoints")
