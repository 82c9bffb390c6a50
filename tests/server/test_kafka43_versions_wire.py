"""Issue 33 item 6 on the wire (raw sockets, real server): the versions Kafka 4.3 added to existing APIs.
Produce v13, OffsetCommit v10 and OffsetFetch v10 name topics by id; Fetch v18, ListOffsets v10-11,
Metadata v13, DescribeGroups v6, DescribeCluster v2 and InitProducerId's unadvertised v6; and the old
versions Kafka 4 removed, which are no longer advertised and close the connection as Kafka does."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch
from tests.server.wire import call, connect, create_topic, is_closed, send

E = ErrorCode
UNKNOWN_ID = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    return connect(server.address)


def _topic(sock: socket.socket, name: str, partitions: int) -> uuid.UUID:
    created = create_topic(sock, name, partitions, version=7)
    assert created["error_code"] == 0
    return created["topic_id"]  # type: ignore[no-any-return]


def _produce_v13(sock: socket.socket, topics: list[tuple[uuid.UUID, int, bytes]]) -> dict[str, Any]:
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [
            {"topic_id": topic_id, "partition_data": [{"index": index, "records": records}]}
            for topic_id, index, records in topics
        ],
    }  # fmt: skip
    return call(sock, 0, 13, body)


def _fetch_v18(sock: socket.socket, topic_id: uuid.UUID, partition: int, offset: int) -> dict[str, Any]:
    body = {
        "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
        "session_epoch": -1, "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id, "partitions": [
            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
             "high_watermark": 5}  # a follower's (KIP-1166): a tagged field the leader may ignore
        ]}],
    }  # fmt: skip
    return call(sock, 1, 18, body)


def test_produce_v13_names_topics_by_id_and_fetch_v18_reads_them_back(sock: socket.socket) -> None:
    orders = _topic(sock, "orders", 2)
    answer = _produce_v13(sock, [(orders, 1, batch(3)), (UNKNOWN_ID, 0, batch(1)), (orders, 7, batch(1))])
    by_id = [(t["topic_id"], t["name"], p["index"], p["error_code"], p["base_offset"])
             for t in answer["responses"] for p in t["partition_responses"]]  # fmt: skip
    assert by_id == [
        (orders, "", 1, E.NONE, 0),
        (UNKNOWN_ID, "", 0, E.UNKNOWN_TOPIC_ID, -1),
        (orders, "", 7, E.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]
    assert (
        _produce_v13(sock, [(orders, 1, batch(2))])["responses"][0]["partition_responses"][0]["base_offset"]
        == 3
    )
    fetched = _fetch_v18(sock, orders, 1, 0)["responses"][0]
    assert fetched["topic_id"] == orders
    partition = fetched["partitions"][0]
    assert (partition["error_code"], partition["high_watermark"]) == (E.NONE, 5)
    assert len(partition["records"]) > 0


def _commit_v10(
    sock: socket.socket, topics: list[tuple[uuid.UUID, list[int]]], offset: int
) -> dict[str, Any]:
    body = {
        "group_id": "g10", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [
            {"topic_id": topic_id, "partitions": [
                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": 0,
                 "committed_metadata": "m"} for p in parts
            ]} for topic_id, parts in topics
        ],
    }  # fmt: skip
    return call(sock, 8, 10, body)


def _fetch_offsets(sock: socket.socket, version: int, topics: list[dict[str, Any]] | None) -> dict[str, Any]:
    group = {"group_id": "g10", "member_id": None, "member_epoch": -1, "topics": topics}
    groups: list[dict[str, Any]] = call(sock, 9, version, {"groups": [group], "require_stable": True})[
        "groups"
    ]
    return groups[0]


def test_offset_commit_and_fetch_v10_name_topics_by_id(sock: socket.socket) -> None:
    orders, audit = _topic(sock, "orders", 2), _topic(sock, "audit", 1)
    committed = _commit_v10(sock, [(orders, [0, 1]), (UNKNOWN_ID, [0]), (audit, [0, 4])], 42)["topics"]
    answers = {
        (t["topic_id"], p["partition_index"]): p["error_code"] for t in committed for p in t["partitions"]
    }
    assert answers == {
        (orders, 0): E.NONE, (orders, 1): E.NONE, (audit, 0): E.NONE,
        (audit, 4): E.UNKNOWN_TOPIC_OR_PARTITION, (UNKNOWN_ID, 0): E.UNKNOWN_TOPIC_ID,
    }  # fmt: skip
    assert all(t["name"] == "" for t in committed)  # v10 carries no names
    by_id = _fetch_offsets(sock, 10, [
        {"topic_id": orders, "partition_indexes": [1]}, {"topic_id": UNKNOWN_ID, "partition_indexes": [3]},
    ])  # fmt: skip
    assert by_id["error_code"] == E.NONE
    fetched = {(t["topic_id"], p["partition_index"]): (p["committed_offset"], p["error_code"])
               for t in by_id["topics"] for p in t["partitions"]}  # fmt: skip
    assert fetched == {(orders, 1): (42, E.NONE), (UNKNOWN_ID, 3): (-1, E.UNKNOWN_TOPIC_ID)}
    # the same offsets by name (v9) and, with null topics, all of them by id (v10)
    by_name = _fetch_offsets(sock, 9, [{"name": "audit", "partition_indexes": [0]}])
    assert by_name["topics"][0]["partitions"][0]["committed_offset"] == 42
    everything = _fetch_offsets(sock, 10, None)
    assert {(t["topic_id"], p["partition_index"]) for t in everything["topics"] for p in t["partitions"]} == {
        (orders, 0),
        (orders, 1),
        (audit, 0),
    }


def _list_offsets(sock: socket.socket, version: int, timestamp: int) -> dict[str, Any]:
    body = {
        "replica_id": -1, "isolation_level": 0, "timeout_ms": 1000 if version >= 10 else 0,
        "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "timestamp": timestamp}]}],
    }  # fmt: skip
    return call(sock, 2, version, body)["topics"][0]["partitions"][0]  # type: ignore[no-any-return]


def test_list_offsets_sentinels_by_version_as_replica_manager(sock: socket.socket) -> None:
    _topic(sock, "orders", 1)
    _produce_v13_by_name(sock, "orders", batch(4))
    latest = _list_offsets(sock, 11, -1)
    assert (latest["error_code"], latest["offset"], latest["leader_epoch"]) == (E.NONE, 4, 0)
    pending = _list_offsets(sock, 11, -6)  # earliest pending upload: nothing is tiered
    assert (pending["error_code"], pending["offset"], pending["timestamp"], pending["leader_epoch"]) == (
        E.NONE,
        -1,
        -1,
        -1,
    )
    assert _list_offsets(sock, 10, -6)["error_code"] == E.UNSUPPORTED_VERSION  # -6 needs v11
    assert _list_offsets(sock, 8, -5)["error_code"] == E.UNSUPPORTED_VERSION  # -5 needs v9
    assert _list_offsets(sock, 11, -7)["error_code"] == E.UNSUPPORTED_VERSION  # no such sentinel
    assert _list_offsets(sock, 9, -5)["offset"] == -1


def _produce_v13_by_name(sock: socket.socket, topic: str, records: bytes) -> None:
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }  # fmt: skip
    assert call(sock, 0, 12, body)["responses"][0]["partition_responses"][0]["error_code"] == E.NONE


def test_metadata_v13_describe_groups_v6_and_describe_cluster_v2(sock: socket.socket) -> None:
    orders = _topic(sock, "orders", 1)
    metadata = call(sock, 3, 13, {"topics": None, "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False})  # fmt: skip
    assert metadata["error_code"] == E.NONE
    assert [(t["name"], t["topic_id"]) for t in metadata["topics"]] == [("orders", orders)]
    (missing,) = call(sock, 15, 6, {"groups": ["nope"], "include_authorized_operations": False})["groups"]
    assert (missing["error_code"], missing["error_message"], missing["group_state"]) == (
        E.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
        "Dead",
    )
    (old,) = call(sock, 15, 5, {"groups": ["nope"], "include_authorized_operations": False})["groups"]
    assert (old["error_code"], old["group_state"]) == (E.NONE, "Dead")  # before KIP-1043
    cluster = call(sock, 60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                                 "include_fenced_brokers": True})  # fmt: skip
    assert [(b["broker_id"], b["is_fenced"]) for b in cluster["brokers"]] == [(0, False)]


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(2, 0), (8, 1), (9, 0), (19, 1), (20, 0), (27, 0), (29, 0), (32, 0), (35, 0), (22, 6)],
)
def test_versions_kafka_4_does_not_serve_close_the_connection(
    sock: socket.socket, api_key: int, version: int
) -> None:
    """KIP-896's removed versions, and InitProducerId v6 (unstable in Kafka 4.3): not advertised, and a
    request at one fails Kafka's request parsing, which closes the connection."""
    send(sock, api_key, version, 7, {})
    assert is_closed(sock)
