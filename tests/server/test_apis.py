"""Metadata, FindCoordinator, topic admin, ListOffsets, Fetch and OffsetCommit checks over raw sockets."""

from __future__ import annotations

import time
import uuid

import pytest

from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic, decode_response, read_frame, send

FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, FIND_COORDINATOR = 1, 2, 3, 8, 10
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


def _versions(api_key: int) -> range:
    low, high = SERVED_VERSIONS[api_key]
    return range(low, high + 1)


def _metadata(sock, names: list[str] | None, version: int = 4, allow: bool = False) -> dict:  # type: ignore[no-untyped-def]
    topics = None if names is None else [{"name": n} for n in names]
    return call(sock, METADATA, version, {"topics": topics, "allow_auto_topic_creation": allow})


@pytest.mark.parametrize("version", _versions(METADATA))
def test_metadata_lists_this_node_as_only_broker_and_leader(server: KcoordServer, version: int) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "md-topic", 3)["error_code"] == 0
        body: dict[str, object] = {"topics": [{"name": "md-topic"}, {"name": "missing"}]}
        if version >= 4:
            body["allow_auto_topic_creation"] = False
        response = call(sock, METADATA, version, body)
    assert [(b["node_id"], b["host"], b["port"]) for b in response["brokers"]] == [
        (0, "127.0.0.1", server.port)
    ]
    found, missing = response["topics"]
    assert found["error_code"] == 0 and found["name"] == "md-topic"
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"]) for p in found["partitions"]] == [
        (i, 0, [0]) for i in range(3)
    ]
    # v0-3 cannot refuse auto-creation (Kafka: allow_auto_topic_creation is implied true).
    assert missing["error_code"] == (0 if version < 4 else 3)  # 3 = UNKNOWN_TOPIC_OR_PARTITION
    if version >= 10:
        assert found["topic_id"] != uuid.UUID(int=0)


def test_metadata_auto_creates_topics_with_num_partitions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = KcoordServer(tmp_path / "data", "--num-partitions", "4")
    proc.start()
    try:
        with connect(proc.address) as sock:
            assert _metadata(sock, ["auto"], allow=False)["topics"][0]["error_code"] == 3
            topic = _metadata(sock, ["auto"], allow=True)["topics"][0]
            assert topic["error_code"] == 0 and len(topic["partitions"]) == 4
            v0 = call(sock, METADATA, 0, {"topics": [{"name": "auto-v0"}]})  # v0-3 always allow
            assert v0["topics"][0]["error_code"] == 0
            bad = _metadata(sock, ["bad name!"], allow=True)["topics"][0]
            assert bad["error_code"] == 17  # INVALID_TOPIC_EXCEPTION
    finally:
        proc.kill()


def test_metadata_does_not_auto_create_when_disabled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = KcoordServer(tmp_path / "data", "--auto-create-topics", "false")
    proc.start()
    try:
        with connect(proc.address) as sock:
            assert _metadata(sock, ["auto"], allow=True)["topics"][0]["error_code"] == 3
    finally:
        proc.kill()


@pytest.mark.parametrize("version", _versions(FIND_COORDINATOR))
def test_find_coordinator_returns_this_node_for_groups(server: KcoordServer, version: int) -> None:
    with connect(server.address) as sock:
        if version >= 4:
            body = {"key_type": 0, "coordinator_keys": ["g1", "g2", ""]}
            coordinators = call(sock, FIND_COORDINATOR, version, body)["coordinators"]
            assert [(c["key"], c["node_id"], c["port"], c["error_code"]) for c in coordinators] == [
                ("g1", 0, server.port, 0),
                ("g2", 0, server.port, 0),
                ("", 0, server.port, 0),
            ]
            txn = call(sock, FIND_COORDINATOR, version, {"key_type": 1, "coordinator_keys": ["t"]})
            found = txn["coordinators"][0]  # the transaction coordinator is this node too
            assert (found["error_code"], found["node_id"], found["port"]) == (0, 0, server.port)
            other = call(sock, FIND_COORDINATOR, version, {"key_type": 2, "coordinator_keys": ["s"]})
            assert other["coordinators"][0]["error_code"] == 42  # INVALID_REQUEST: no share coordinator
        else:
            response = call(sock, FIND_COORDINATOR, version, {"key": "g1", "key_type": 0})
            assert (response["error_code"], response["node_id"], response["host"], response["port"]) == (
                0,
                0,
                "127.0.0.1",
                server.port,
            )
            if version >= 1:
                txn = call(sock, FIND_COORDINATOR, version, {"key": "t", "key_type": 1})
                assert (txn["error_code"], txn["node_id"], txn["port"]) == (0, 0, server.port)


def test_create_topics_validates_like_kafka(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "t1", 2)["error_code"] == 0
        assert create_topic(sock, "t1", 2)["error_code"] == 36  # TOPIC_ALREADY_EXISTS
        assert create_topic(sock, "bad/name", 1)["error_code"] == 17
        assert create_topic(sock, "zero", 0)["error_code"] == 37  # INVALID_PARTITIONS
        assert create_topic(sock, "rf3", 1, replication_factor=3)["error_code"] == 38
        assert create_topic(sock, "default", -1, replication_factor=-1)["error_code"] == 0
        assert create_topic(sock, "validate", 2, version=4)["error_code"] == 0
        response = call(
            sock,
            CREATE_TOPICS,
            4,
            {
                "topics": [
                    {
                        "name": "only-validated",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 1000,
                "validate_only": True,
            },
        )
        assert response["topics"][0]["error_code"] == 0
        names = {t["name"]: len(t["partitions"]) for t in _metadata(sock, None)["topics"]}
    assert names == {"t1": 2, "default": 1, "validate": 2}


def test_create_partitions_grows_and_delete_topics_removes(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "grow", 2)["error_code"] == 0
        body = {"topics": [{"name": "grow", "count": 5, "assignments": None}], "timeout_ms": 1000}
        assert call(sock, CREATE_PARTITIONS, 1, body)["results"][0]["error_code"] == 0
        assert call(sock, CREATE_PARTITIONS, 1, body)["results"][0]["error_code"] == 37
        missing = {"topics": [{"name": "nope", "count": 5, "assignments": None}], "timeout_ms": 1000}
        assert call(sock, CREATE_PARTITIONS, 1, missing)["results"][0]["error_code"] == 3
        assert len(_metadata(sock, ["grow"])["topics"][0]["partitions"]) == 5
        deleted = call(sock, DELETE_TOPICS, 1, {"topic_names": ["grow", "nope"], "timeout_ms": 1000})
        assert [(r["name"], r["error_code"]) for r in deleted["responses"]] == [("grow", 0), ("nope", 3)]
        assert _metadata(sock, ["grow"])["topics"][0]["error_code"] == 3


def test_list_offsets_of_empty_partitions_are_zero(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "lo", 2)["error_code"] == 0
        parts = [
            {"partition_index": 0, "timestamp": -2},
            {"partition_index": 1, "timestamp": -1},
            {"partition_index": 7, "timestamp": -1},
        ]
        body = {"replica_id": -1, "topics": [{"name": "lo", "partitions": parts}]}
        response = call(sock, LIST_OFFSETS, 1, body)
    got = [(p["partition_index"], p["error_code"], p["offset"]) for p in response["topics"][0]["partitions"]]
    assert got == [(0, 0, 0), (1, 0, 0), (7, 3, -1)]


def test_fetch_at_zero_waits_max_wait_and_returns_no_records(server: KcoordServer) -> None:
    version = max(v for v in _versions(FETCH) if v <= 11)
    with connect(server.address) as sock:
        assert create_topic(sock, "fe", 1)["error_code"] == 0
        part = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
        body = {
            "replica_id": -1,
            "max_wait_ms": 300,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [{"topic": "fe", "partitions": [part]}],
        }
        started = time.monotonic()
        response = call(sock, FETCH, version, body)
        waited = time.monotonic() - started
        assert waited >= 0.25
        partition = response["responses"][0]["partitions"][0]
        assert (partition["error_code"], partition["high_watermark"]) == (0, 0)
        assert partition["records"] in (b"", None) and partition["records"] is not None
        out_of_range = {**body, "topics": [{"topic": "fe", "partitions": [{**part, "fetch_offset": 5}]}]}
        partition = call(sock, FETCH, version, out_of_range)["responses"][0]["partitions"][0]
        assert partition["error_code"] == 1  # OFFSET_OUT_OF_RANGE, answered at once


def test_offset_commit_for_unknown_topic_is_unknown_topic_or_partition(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "oc", 1)["error_code"] == 0
        topics = [
            {
                "name": "oc",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_metadata": "m"},
                    {"partition_index": 3, "committed_offset": 5, "committed_metadata": ""},
                ],
            },
            {
                "name": "ghost",
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            },
        ]
        body = {
            "group_id": "simple",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": topics,
        }
        response = call(sock, OFFSET_COMMIT, 2, body)
    errors = {
        (t["name"], p["partition_index"]): p["error_code"]
        for t in response["topics"]
        for p in t["partitions"]
    }
    assert errors == {("oc", 0): 0, ("oc", 3): 3, ("ghost", 0): 3}


def _produce_body(acks: int) -> dict[str, object]:
    partitions = [{"index": 0, "records": b""}, {"index": 9, "records": b""}]
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [{"name": "pr", "partition_data": partitions}],
    }


def test_produce_with_acks_0_gets_no_response(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "pr", 1)["error_code"] == 0
        send(sock, 0, 3, 41, _produce_body(acks=0))
        send(sock, 18, 0, 42, {})
        correlation_id, _ = decode_response(18, 0, read_frame(sock))
    assert correlation_id == 42  # the Produce got no response slot
