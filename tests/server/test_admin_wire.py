"""ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46) and
DescribeLogDirs (35) on the wire, every served version (raw sockets, real server): the answers of
Kafka's controller (ReplicationControlManager) and ReplicaManager.describeLogDirs for a one-broker
cluster whose broker is node 0."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.wire import call, connect, create_topic

E = ErrorCode
ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, DESCRIBE_LOG_DIRS = 43, 45, 46, 35
NODE = 0
NOT_NEEDED = (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    s = connect(server.address)
    for name, partitions in (("orders", 3), ("audit", 1)):
        assert create_topic(s, name, partitions)["error_code"] == 0
    return s


def _elect(
    sock: socket.socket, version: int, topic_partitions: Any, election_type: int = 0
) -> dict[str, Any]:
    body: dict[str, Any] = {"topic_partitions": topic_partitions, "timeout_ms": 5000}
    if version >= 1:
        body["election_type"] = election_type
    return call(sock, ELECT_LEADERS, version, body)


def _by_partition(response: dict[str, Any]) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {
        (r["topic"], p["partition_id"]): (p["error_code"], p["error_message"])
        for r in response["replica_election_results"]
        for p in r["partition_result"]
    }


def test_the_apis_are_advertised_over_kafka_4_ranges(sock: socket.socket) -> None:
    hello = {"client_software_name": "kcoord-test", "client_software_version": "1"}
    keys = call(sock, 18, 3, hello)["api_keys"]
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in keys}
    assert {k: advertised[k] for k in (35, 43, 45, 46)} == {35: (1, 5), 43: (0, 2), 45: (0, 1), 46: (0, 0)}


@pytest.mark.parametrize("version", range(3))
def test_elect_leaders_answers_election_not_needed_and_unknown_partitions(
    sock: socket.socket, version: int
) -> None:
    named = [{"topic": "orders", "partitions": [0, 2, 7]}, {"topic": "ghost", "partitions": [0]}]
    for election_type in (0, 1) if version >= 1 else (0,):
        response = _elect(sock, version, named, election_type)
        assert _by_partition(response) == {
            ("orders", 0): NOT_NEEDED,
            ("orders", 2): NOT_NEEDED,
            ("orders", 7): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as orders-7"),
            ("ghost", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as ghost"),
        }
        assert response["error_code"] == 0


@pytest.mark.parametrize("version", range(3))
def test_elect_leaders_for_every_partition_lists_each_topic_without_the_partitions_not_needing_one(
    sock: socket.socket, version: int
) -> None:
    # ReplicationControlManager.electLeaders with null partitions: a result per topic, and under it only
    # the partitions whose answer is not ELECTION_NOT_NEEDED: none on one broker.
    response = _elect(sock, version, None)
    assert sorted((r["topic"], r["partition_result"]) for r in response["replica_election_results"]) == [
        ("audit", []),
        ("orders", []),
    ]
    assert _elect(sock, version, [])["replica_election_results"] == []  # empty: nothing to do


@pytest.mark.parametrize("version", (1, 2))
def test_an_unknown_election_type_is_invalid_request_everywhere(sock: socket.socket, version: int) -> None:
    response = _elect(sock, version, [{"topic": "orders", "partitions": [0, 1]}], election_type=2)
    invalid = (E.INVALID_REQUEST, "Unknown election type 2")
    assert response["error_code"] == E.INVALID_REQUEST
    assert _by_partition(response) == {("orders", 0): invalid, ("orders", 1): invalid}


def _alter(sock: socket.socket, topics: list[dict[str, Any]]) -> dict[str, Any]:
    return call(sock, ALTER_REASSIGNMENTS, 0, {"timeout_ms": 5000, "topics": topics})


def test_alter_partition_reassignments_validates_the_target_replicas_as_the_controller(
    sock: socket.socket,
) -> None:
    assert create_topic(sock, "moves", 5)["error_code"] == 0
    targets = {0: [NODE], 1: [NODE, 1], 2: [NODE, NODE], 3: [], 4: None}
    partitions = [{"partition_index": p, "replicas": r} for p, r in targets.items()]
    response = _alter(sock, [{"name": "moves", "partitions": partitions}, {"name": "ghost", "partitions": [
        {"partition_index": 0, "replicas": [NODE]}]}])  # fmt: skip
    assert (response["error_code"], response["error_message"]) == (0, None)
    answers = {
        (t["name"], p["partition_index"]): (p["error_code"], p["error_message"])
        for t in response["responses"]
        for p in t["partitions"]
    }
    invalid, prefix = E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes"
    assert answers == {
        ("moves", 0): (0, None),  # already there: nothing to move
        ("moves", 1): (invalid, f"{prefix} broker 1, but no such broker is registered."),
        ("moves", 2): (invalid, f"{prefix} the broker 0 more than once."),
        ("moves", 3): (invalid, f"{prefix} an empty replica list."),
        ("moves", 4): (E.NO_REASSIGNMENT_IN_PROGRESS, None),  # cancel, but nothing runs
        ("ghost", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named ghost."),
    }
    past_the_end = _alter(
        sock, [{"name": "audit", "partitions": [{"partition_index": 1, "replicas": [NODE]}]}]
    )
    assert (
        past_the_end["responses"][0]["partitions"][0]["error_message"] == "Unable to find partition audit:1."
    )
    assert _alter(sock, []) == {
        "throttle_time_ms": 0, "error_code": 0, "error_message": "", "responses": [],
        "allow_replication_factor_change": True,
    }  # fmt: skip


def test_list_partition_reassignments_has_none_in_progress(sock: socket.socket) -> None:
    assert (
        _alter(sock, [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": [NODE]}]}])[
            "responses"
        ][0]["partitions"][0]["error_code"]
        == 0
    )
    for topics in (
        None,
        [{"name": "orders", "partition_indexes": [0, 1, 9]}],
        [{"name": "ghost", "partition_indexes": [0]}],
        [],
    ):
        response = call(sock, LIST_REASSIGNMENTS, 0, {"timeout_ms": 5000, "topics": topics})
        assert (response["error_code"], response["error_message"], response["topics"]) == (0, None, [])


def _segment_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.glob("*.log"))


@pytest.mark.parametrize("version", range(1, 6))
def test_describe_log_dirs_reports_the_partitions_with_their_size_on_disk(
    server: KcoordServer, sock: socket.socket, version: int
) -> None:
    for partition, count in ((0, 5), (2, 1)):
        assert produce(sock, "orders", partition, batch(count, size=100))["error_code"] == 0
    root = server.data_dir / "topics"
    response = call(sock, DESCRIBE_LOG_DIRS, version, {"topics": None})
    assert response["error_code"] == 0
    (result,) = response["results"]
    assert (result["error_code"], result["log_dir"]) == (0, os.path.abspath(root))
    sizes = {
        (t["name"], p["partition_index"]): (p["partition_size"], p["offset_lag"], p["is_future_key"])
        for t in result["topics"]
        for p in t["partitions"]
    }
    written = _segment_bytes(root / "orders-0")
    assert written > 500 and _segment_bytes(root / "orders-2") > 100
    assert sizes == {
        ("orders", 0): (written, 0, False),
        ("orders", 1): (0, 0, False),  # never written: an empty log
        ("orders", 2): (_segment_bytes(root / "orders-2"), 0, False),
        ("audit", 0): (0, 0, False),
    }
    if version >= 4:
        volume = os.statvfs(root)
        assert result["total_bytes"] == volume.f_blocks * volume.f_frsize
        assert 0 < result["usable_bytes"] <= result["total_bytes"]
    else:
        assert (result["total_bytes"], result["usable_bytes"]) == (-1, -1)
    assert result["is_cordoned"] is False  # v5 (KIP-1066): no directory is cordoned; the default before


@pytest.mark.parametrize("version", (1, 4))
def test_describe_log_dirs_of_named_partitions_leaves_out_what_does_not_exist(
    sock: socket.socket, version: int
) -> None:
    asked = [
        {"topic": "orders", "partitions": [1, 5]},
        {"topic": "ghost", "partitions": [0]},
        {"topic": "audit", "partitions": [3]},
    ]
    (result,) = call(sock, DESCRIBE_LOG_DIRS, version, {"topics": asked})["results"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in result["topics"]] == [
        ("orders", [1])
    ]
    (result,) = call(sock, DESCRIBE_LOG_DIRS, version, {"topics": []})["results"]
    assert (result["error_code"], result["topics"]) == (0, [])  # the log dir, no partitions
