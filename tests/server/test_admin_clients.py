"""Stock admin clients on ElectLeaders, Alter/ListPartitionReassignments and DescribeLogDirs (issue 27:
kafka-python's admin suite met IncompatibleBrokerVersion on each): kafka-python 3.0's KafkaAdminClient
(describe_log_dirs, elect_leaders, alter_partition_reassignments, list_partition_reassignments) and
confluent-kafka's AdminClient.elect_leaders (its only one of the four)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kcoord_process import KcoordServer

pytestmark = pytest.mark.timeout(120)

TOPIC = "orders"


@pytest.fixture
def kafka_python_admin(server: KcoordServer) -> Iterator[Any]:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(
        bootstrap_servers=server.bootstrap, client_id="admin-apis", request_timeout_ms=10000
    )
    admin.create_topics([NewTopic(TOPIC, 3, 1)])
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all")
    for i in range(20):
        producer.send(TOPIC, b"%d" % i + b"x" * 100, partition=i % 2)
    producer.flush(timeout=15)
    producer.close()
    try:
        yield admin
    finally:
        admin.close()


def _on_disk(server: KcoordServer, partition: int) -> int:
    directory = server.data_dir / "topics" / f"{TOPIC}-{partition}"
    return sum(f.stat().st_size for f in directory.glob("*.log"))


def test_kafka_python_describes_the_log_dir_with_sizes_on_disk(
    server: KcoordServer, kafka_python_admin: Any
) -> None:
    (broker,) = kafka_python_admin.describe_log_dirs()
    (log_dir,) = broker["log_dirs"]
    assert (broker["broker"], log_dir["error_code"]) == (0, 0)
    assert log_dir["log_dir"] == os.path.abspath(server.data_dir / "topics")
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]  # v4: kafka-python's newest in common
    sizes = {
        (t["name"], p["partition_index"]): (p["partition_size"], p["offset_lag"])
        for t in log_dir["topics"]
        for p in t["partitions"]
    }
    assert sizes == {(TOPIC, p): (_on_disk(server, p), 0) for p in range(3)}
    assert sizes[TOPIC, 0][0] > 1000 and sizes[TOPIC, 2][0] == 0
    (broker,) = kafka_python_admin.describe_log_dirs({TOPIC: [1, 9]})
    assert [
        (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in broker["log_dirs"][0]["topics"]
    ] == [(TOPIC, [1])]


def test_kafka_python_elects_nothing_moves_nothing_and_lists_no_reassignment(kafka_python_admin: Any) -> None:
    from kafka import TopicPartition
    from kafka.errors import (
        ElectionNotNeededError,
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
    )

    # every partition (kafka-python names them from Metadata): ELECTION_NOT_NEEDED, which it ignores
    response = kafka_python_admin.elect_leaders(0)
    assert {
        (r.topic, p.partition_id, p.error_code)
        for r in response.replica_election_results
        for p in r.partition_result
    } == {(TOPIC, p, ElectionNotNeededError.errno) for p in range(3)}
    unclean = kafka_python_admin.elect_leaders(1, {TOPIC: [2]})
    assert unclean.replica_election_results[0].partition_result[0].error_code == ElectionNotNeededError.errno
    tp = [TopicPartition(TOPIC, p) for p in range(3)]
    assert kafka_python_admin.alter_partition_reassignments({tp[0]: [0], tp[1]: [0, 1], tp[2]: None}) == {
        tp[0]: None,
        tp[1]: InvalidReplicationAssignmentError,
        tp[2]: NoReassignmentInProgressError,
    }
    assert kafka_python_admin.list_partition_reassignments() == {}
    assert kafka_python_admin.list_partition_reassignments(tp) == {}


def test_confluent_kafka_elect_leaders(server: KcoordServer) -> None:
    from confluent_kafka import ElectionType, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(timeout=15)
    asked = [
        TopicPartition(TOPIC, 0),
        TopicPartition(TOPIC, 1),
        TopicPartition(TOPIC, 5),
        TopicPartition("ghost", 0),
    ]
    for election_type in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        result = admin.elect_leaders(election_type, asked).result(timeout=15)
        assert {(tp.topic, tp.partition): (e.code(), e.str()) for tp, e in result.items()} == {
            (TOPIC, 0): (KafkaError.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
            (TOPIC, 1): (KafkaError.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
            (TOPIC, 5): (KafkaError.UNKNOWN_TOPIC_OR_PART, f"No such partition as {TOPIC}-5"),
            ("ghost", 0): (KafkaError.UNKNOWN_TOPIC_OR_PART, "No such topic as ghost"),
        }
    # all partitions: Kafka answers only those that needed an election, so none here
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=15) == {}
