"""`__consumer_offsets` on the wire (issue 33 item 5): Metadata lists it internal with
offsets.topic.num.partitions partitions, Fetch (by name and by topic id) and ListOffsets read it, and
every write is refused as Kafka refuses writes to an internal topic."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.offsets_decoder import java_partition, read_batches, read_key, read_value
from tests.server.wire import call, connect, create_topic

TOPIC = "__consumer_offsets"


@pytest.fixture
def conn(server: KcoordServer) -> Iterator[socket.socket]:
    with connect(server.address) as sock:
        yield sock


def metadata(sock: socket.socket, version: int, topics: list[dict[str, Any]] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"topics": topics}
    if version >= 4:
        body["allow_auto_topic_creation"] = False
    return call(sock, 3, version, body)


def commit(sock: socket.socket, group: str, topic: str, offset: int) -> None:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                     "committed_metadata": "m"}
                ],
            }
        ],
    }  # fmt: skip
    answer = call(sock, 8, 8, body)
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer


def fetch(sock: socket.socket, version: int, topic: dict[str, Any], partition: int) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                **topic,
                "partitions": [{"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return call(sock, 1, version, body)["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def test_it_exists_once_a_group_needs_it_as_kafka_creates_it(conn: socket.socket) -> None:
    # Kafka creates the topic when a group first needs it: a fresh server lists no such topic
    assert TOPIC not in [t["name"] for t in metadata(conn, 12, None)["topics"]]
    assert (
        metadata(conn, 12, [{"name": TOPIC}])["topics"][0]["error_code"]
        == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert fetch(conn, 12, {"topic": TOPIC}, 0)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # a Metadata request that may auto-create names it: created (KafkaApis.getTopicMetadata)
    created = call(conn, 3, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})["topics"][0]
    assert created["error_code"] == 0 and created["is_internal"] is True and len(created["partitions"]) == 50


def test_a_groups_first_commit_creates_it(server: KcoordServer, conn: socket.socket) -> None:
    assert create_topic(conn, "orders", 1)["error_code"] == 0
    commit(conn, "first-group", "orders", 1)
    assert TOPIC in [t["name"] for t in metadata(conn, 12, None)["topics"]]
    server.restart()  # the log holds a group's record: it exists after a restart too
    with connect(server.address) as again:
        assert TOPIC in [t["name"] for t in metadata(again, 12, None)["topics"]]


def test_metadata_lists_it_internal_with_fifty_partitions(conn: socket.socket) -> None:
    assert create_topic(conn, "orders", 1)["error_code"] == 0
    commit(conn, "some-group", "orders", 1)
    everything = metadata(conn, 12, None)["topics"]
    (entry,) = [t for t in everything if t["name"] == TOPIC]
    assert entry["error_code"] == 0 and entry["is_internal"] is True
    assert [p["partition_index"] for p in entry["partitions"]] == list(range(50))
    named = metadata(conn, 1, [{"name": TOPIC}])["topics"][0]
    assert named["is_internal"] is True and len(named["partitions"]) == 50
    by_id = metadata(conn, 12, [{"name": None, "topic_id": entry["topic_id"]}])["topics"][0]
    assert by_id["name"] == TOPIC and by_id["error_code"] == 0
    assert metadata(conn, 0, [{"name": TOPIC}])["topics"][0]["error_code"] == 0  # v0 has no is_internal


def test_fetch_and_list_offsets_read_the_groups_records(conn: socket.socket) -> None:
    assert create_topic(conn, "orders", 1)["error_code"] == 0
    commit(conn, "wire-group", "orders", 42)
    partition = java_partition("wire-group", 50)
    latest = {"partition_index": partition, "timestamp": -1, "current_leader_epoch": -1}
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [latest]}]}
    listed = call(conn, 2, 7, body)["topics"][0]["partitions"][0]
    assert listed["error_code"] == 0 and listed["offset"] > 0
    got = fetch(conn, 12, {"topic": TOPIC}, partition)
    assert got["error_code"] == 0 and got["high_watermark"] == listed["offset"]
    records = [r for r in read_batches(got["records"]) if r.key is not None and read_key(r.key)[0] == 1]
    (record,) = records
    assert read_key(record.key or b"") == (1, {"group": "wire-group", "topic": "orders", "partition": 0})
    assert read_value(1, record.value or b"")[1]["offset"] == 42
    topic_id = metadata(conn, 12, [{"name": TOPIC}])["topics"][0]["topic_id"]
    by_id = fetch(conn, 13, {"topic_id": topic_id}, partition)
    assert by_id["error_code"] == 0 and by_id["records"] == got["records"]
    assert fetch(conn, 13, {"topic_id": uuid.uuid4()}, 0)["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert fetch(conn, 12, {"topic": TOPIC}, 50)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_writes_are_refused_as_kafka_refuses_them_on_internal_topics(conn: socket.socket) -> None:
    assert create_topic(conn, "orders", 1)["error_code"] == 0
    commit(conn, "some-group", "orders", 1)
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, 1_700_000_000_000, b"k", b"v", [])
    produce = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": bytes(builder.build())}]}
    ]}  # fmt: skip
    produced = call(conn, 0, 9, produce)["responses"][0]["partition_responses"][0]
    assert produced["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION  # ReplicaManager.appendToLocalLog
    assert "internal topic" in (produced["error_message"] or "")
    wanted = [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": -1}]}]
    deleted = call(conn, 21, 2, {"topics": wanted, "timeout_ms": 5000})
    assert deleted["topics"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    dropped = call(conn, 20, 5, {"topic_names": [TOPIC], "timeout_ms": 5000})["responses"][0]
    assert dropped["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    grown = call(conn, 37, 2, {"topics": [{"name": TOPIC, "count": 60, "assignments": None}],
                               "timeout_ms": 5000, "validate_only": False})["results"][0]  # fmt: skip
    assert grown["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert create_topic(conn, TOPIC, 50)["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    entry = metadata(conn, 12, [{"name": TOPIC}])["topics"][0]
    assert entry["error_code"] == 0 and len(entry["partitions"]) == 50  # still the view, unchanged


@pytest.mark.server_args("--offsets-topic-num-partitions", "7")
def test_the_partition_count_is_the_flags(conn: socket.socket) -> None:
    assert create_topic(conn, "orders", 1)["error_code"] == 0
    commit(conn, "seven", "orders", 5)
    entry = metadata(conn, 12, [{"name": TOPIC}])["topics"][0]
    assert len(entry["partitions"]) == 7
    got = fetch(conn, 12, {"topic": TOPIC}, java_partition("seven", 7))
    assert any(r.key and read_key(r.key)[1].get("group") == "seven" for r in read_batches(got["records"]))


def test_a_group_coordinator_lookup_makes_the_internal_topic(conn: socket.socket) -> None:
    """KafkaApis.getCoordinator creates `__consumer_offsets` at a group's first FindCoordinator: Metadata
    lists it afterwards even though no group has written anything yet."""
    assert metadata(conn, 12, [{"name": TOPIC}])["topics"][0]["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    found = call(conn, 10, 4, {"key_type": 0, "coordinator_keys": ["lookup-only"]})
    assert found["coordinators"][0]["error_code"] == 0
    [listed] = metadata(conn, 12, [{"name": TOPIC}])["topics"]
    assert listed["error_code"] == 0 and listed["is_internal"] is True
    assert len(listed["partitions"]) == 50
