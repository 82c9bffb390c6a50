"""Kafka's replica model in cluster mode (issue 35 item 3): CreateTopics takes a replication factor up
to the live nodes and refuses one above with Kafka's message, Metadata and DescribeTopicPartitions list
that many replicas (the leader first) all in sync, and acks=all checks min.insync.replicas against them:
once a node is gone a topic asking for three in sync refuses with NOT_ENOUGH_REPLICAS, as Kafka's
Partition.appendRecordsToLeader does."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.protocol.errors import ErrorCode
from tests.cluster.nodes import Node, init_cluster, nodes, rpc, until
from tests.server.order_wire import metadata

pytestmark = pytest.mark.timeout(300)


def _create(node: Node, name: str, factor: int, configs: dict[str, str] | None = None) -> dict[str, Any]:
    topic = {"name": name, "num_partitions": 2, "replication_factor": factor, "assignments": [],
             "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}  # fmt: skip
    return rpc(node.address, 19, 7, {"topics": [topic], "timeout_ms": 5000})["topics"][0]  # type: ignore[no-any-return]


def _partitions(node: Node, name: str) -> list[dict[str, Any]]:
    (found,) = rpc(node.address, *metadata(name))["topics"]
    assert found["error_code"] == ErrorCode.NONE, found
    return sorted(found["partitions"], key=lambda p: p["partition_index"])


def _produce(node: Node, name: str, partition: int) -> dict[str, Any]:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, int(time.time() * 1000), b"k", b"v", [])
    data = [{"name": name, "partition_data": [{"index": partition, "records": bytes(builder.build())}]}]
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": data}
    return rpc(node.address, 0, 8, body)["responses"][0]["partition_responses"][0]  # type: ignore[no-any-return]


def test_replication_factor_up_to_the_live_nodes_listed_as_replicas_in_sync(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], 3000) as cluster:
        first = cluster[0]
        until(lambda: len(rpc(first.address, *metadata())["brokers"]) == 3 or None, 30, "three brokers")
        too_many = _create(first, "rf-four", 4)
        assert too_many["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR, too_many
        assert "only 3 broker(s) are registered" in too_many["error_message"], too_many
        created = _create(first, "rf-three", 3, {"min.insync.replicas": "3"})
        assert (created["error_code"], created["replication_factor"]) == (ErrorCode.NONE, 3), created
        assert _create(first, "rf-default", -1)["replication_factor"] == 1

        for node in cluster:  # every node lists the same three replicas, the leader first, all in sync
            for p in _partitions(node, "rf-three"):
                assert sorted(p["replica_nodes"]) == [1, 2, 3], p
                assert p["replica_nodes"][0] == p["leader_id"], p
                assert sorted(p["isr_nodes"]) == [1, 2, 3] and p["offline_replicas"] == [], p
            assert [p["replica_nodes"] for p in _partitions(node, "rf-default")] == [
                [p["leader_id"]] for p in _partitions(node, "rf-default")
            ]
        by_id = {n.node_id: n for n in cluster}
        for p in _partitions(first, "rf-three"):
            answer = _produce(by_id[p["leader_id"]], "rf-three", p["partition_index"])
            assert answer["error_code"] == ErrorCode.NONE, answer

        cluster[2].kill()  # node 3: two live nodes are left for a topic asking three in sync

        def two_replicas() -> list[dict[str, Any]] | None:
            parts = _partitions(first, "rf-three")
            ok = all(sorted(p["replica_nodes"]) == [1, 2] and p["leader_id"] in (1, 2) for p in parts)
            return parts if ok else None

        parts = until(two_replicas, 30, "the replicas shrink to the two live nodes")
        for p in parts:
            answer = _produce(by_id[p["leader_id"]], "rf-three", p["partition_index"])
            assert answer["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS, answer
            assert "min.isr requirement of 3" in answer["error_message"], answer


def _manual(node: Node, name: str, lists: list[list[int]]) -> dict[str, Any]:
    assignments = [{"partition_index": i, "broker_ids": b} for i, b in enumerate(lists)]
    topic = {"name": name, "num_partitions": -1, "replication_factor": -1, "assignments": assignments,
             "configs": []}  # fmt: skip
    return rpc(node.address, 19, 7, {"topics": [topic], "timeout_ms": 5000})["topics"][0]  # type: ignore[no-any-return]


def _grow(node: Node, name: str, count: int, lists: list[list[int]]) -> dict[str, Any]:
    topic = {"name": name, "count": count, "assignments": [{"broker_ids": b} for b in lists]}
    body = {"topics": [topic], "timeout_ms": 5000, "validate_only": False}
    return rpc(node.address, 37, 3, body)["results"][0]  # type: ignore[no-any-return]


def test_a_manual_assignment_names_any_live_nodes_and_its_first_live_replica_leads(
    tmp_path: Path, cluster_dsn: str
) -> None:
    # ReplicationControlManager.createTopic / createPartitions: any registered broker, each once, every list
    # as long as the first (the topic's factor); the PartitionRecord's leader is the first live replica.
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], 3000) as cluster:
        first = cluster[0]
        until(lambda: len(rpc(first.address, *metadata())["brokers"]) == 3 or None, 30, "three brokers")
        unknown = _manual(first, "m-unknown", [[1, 9]])
        assert (unknown["error_code"], unknown["error_message"]) == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        )
        uneven = _manual(first, "m-uneven", [[1, 2], [3]])
        assert uneven["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT, uneven
        assert "a partition with 1 replica(s)" in uneven["error_message"], uneven

        created = _manual(first, "m-placed", [[3, 2], [2, 1]])  # answered once the first replicas lead
        assert (created["error_code"], created["replication_factor"]) == (ErrorCode.NONE, 2), created
        grown = _grow(first, "m-placed", 3, [[1, 3]])
        assert (grown["error_code"], grown["error_message"]) == (ErrorCode.NONE, None), grown
        refused = _grow(first, "m-placed", 4, [[1]])  # as long as the topic's replication factor
        assert refused["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT, refused
        placed = {0: [3, 2], 1: [2, 1], 2: [1, 3]}

        def listed(node: Node) -> dict[int, tuple[int, list[int]]]:
            return {
                p["partition_index"]: (p["leader_id"], p["replica_nodes"])
                for p in _partitions(node, "m-placed")
            }

        expected = {p: (replicas[0], replicas) for p, replicas in placed.items()}
        for node in cluster:  # every node within a placement poll of the answer
            until(lambda node=node: listed(node) == expected or None, 10, f"node {node.node_id}'s Metadata")
        by_id = {n.node_id: n for n in cluster}
        for p, (leader, _) in expected.items():
            answer = _produce(by_id[leader], "m-placed", p)
            assert answer["error_code"] == ErrorCode.NONE, answer

        by_id[3].kill()  # partition 0's first replica: its second takes over, still listed second
        until(lambda: listed(first)[0] == (2, [3, 2]) or None, 30, "partition 0 led by node 2")

        gone = {"name": "m-placed", "topic_id": uuid.UUID(int=0)}  # the name again: no assignment kept
        assert (
            rpc(first.address, 20, 6, {"topics": [gone], "timeout_ms": 5000})["responses"][0]["error_code"]
            == 0
        )
        assert _create(first, "m-placed", 1)["error_code"] == ErrorCode.NONE
        again = until(lambda: [p["replica_nodes"] for p in _partitions(first, "m-placed")] or None, 10, "led")
        assert [len(replicas) for replicas in again] == [1, 1], again
