"""Issue 33 item 6 on the wire (raw sockets, real server), every served version: the APIs kcoord did not
serve before. OffsetForLeaderEpoch (23), DescribeTopicPartitions (75), AlterReplicaLogDirs (34),
DescribeQuorum (55) and UpdateFeatures (57), answered as a one-broker Kafka 4.3 answers them."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.wire import call, connect, create_topic

E = ErrorCode
OFFSET_FOR_LEADER_EPOCH, ALTER_REPLICA_LOG_DIRS, DESCRIBE_QUORUM, UPDATE_FEATURES = 23, 34, 55, 57
DESCRIBE_TOPIC_PARTITIONS = 75


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    s = connect(server.address)
    for name, partitions in (("orders", 3), ("audit", 1), ("zeta", 2)):
        assert create_topic(s, name, partitions)["error_code"] == 0
    return s


def _epochs(sock: socket.socket, version: int, partitions: list[tuple[str, int, int, int]]) -> dict[Any, Any]:
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition, current, epoch in partitions:
        topics.setdefault(topic, []).append(
            {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}
        )
    body: dict[str, Any] = {"topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}
    if version >= 3:
        body["replica_id"] = -1  # a consumer
    answer = call(sock, OFFSET_FOR_LEADER_EPOCH, version, body)
    return {
        (t["topic"], p["partition"]): (p["error_code"], p["leader_epoch"], p["end_offset"])
        for t in answer["topics"]
        for p in t["partitions"]
    }


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_answers_the_end_of_the_requested_epoch(
    sock: socket.socket, version: int
) -> None:
    """LeaderEpochFileCache.endOffsetFor over kcoord's history {0: log start}: the leader's own epoch 0
    ends at the log end offset; an unknown (later) epoch and the undefined epoch have no end."""
    assert produce(sock, "orders", 1, batch(6))["error_code"] == 0
    answers = _epochs(sock, version, [
        ("orders", 1, -1, 0), ("orders", 0, 0, 0), ("orders", 2, -1, 3), ("audit", 0, -1, -1),
        ("orders", 1, 1, 0), ("orders", 1, -2, 0), ("orders", 9, -1, 0), ("nope", 0, -1, 0),
    ])  # fmt: skip
    assert answers == {
        ("orders", 1): (E.FENCED_LEADER_EPOCH, -1, -1),  # the last entry for a partition counts
        ("orders", 0): (E.NONE, 0, 0),
        ("orders", 2): (E.NONE, -1, -1),
        ("audit", 0): (E.NONE, -1, -1),
        ("orders", 9): (E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        ("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    }
    assert _epochs(sock, version, [("orders", 1, 0, 0)]) == {("orders", 1): (E.NONE, 0, 6)}
    assert _epochs(sock, version, [("orders", 1, 1, 0)]) == {("orders", 1): (E.UNKNOWN_LEADER_EPOCH, -1, -1)}


def _describe(
    sock: socket.socket, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> dict[str, Any]:
    body = {
        "topics": [{"name": n} for n in names],
        "response_partition_limit": limit,
        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    }
    return call(sock, DESCRIBE_TOPIC_PARTITIONS, 0, body)


def _pages(answer: dict[str, Any]) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
    topics = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in answer["topics"]]
    cursor = answer["next_cursor"]
    return topics, None if cursor is None else (cursor["topic_name"], cursor["partition_index"])


def test_describe_topic_partitions_pages_every_topic_by_cursor(sock: socket.socket) -> None:
    assert _pages(_describe(sock, [])) == ([("audit", [0]), ("orders", [0, 1, 2]), ("zeta", [0, 1])], None)
    first = _describe(sock, [], limit=2)
    assert _pages(first) == ([("audit", [0]), ("orders", [0])], ("orders", 1))
    second = _describe(sock, [], limit=2, cursor=("orders", 1))
    assert _pages(second) == ([("orders", [1, 2])], ("zeta", 0))  # the limit is used up at a topic's start
    assert _pages(_describe(sock, [], limit=2, cursor=("zeta", 0))) == ([("zeta", [0, 1])], None)
    orders = first["topics"][1]
    assert (
        orders["error_code"] == E.NONE and orders["topic_id"] != ZERO_UUID and orders["is_internal"] is False
    )
    (partition,) = orders["partitions"]
    assert partition == {
        "error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 0, "replica_nodes": [0],
        "isr_nodes": [0], "eligible_leader_replicas": [], "last_known_elr": [], "offline_replicas": [],
    }  # fmt: skip
    assert orders["topic_authorized_operations"] > 0  # every topic operation: no authorizer


def test_describe_topic_partitions_named_topics_errors_and_bad_cursors(sock: socket.socket) -> None:
    answer = _describe(sock, ["zeta", "missing", "bad/name", "audit"])
    assert _pages(answer) == ([("audit", [0]), ("bad/name", []), ("missing", []), ("zeta", [0, 1])], None)
    errors = {t["name"]: (t["error_code"], t["topic_id"]) for t in answer["topics"]}
    assert errors["missing"] == (E.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID)
    assert errors["bad/name"] == (E.INVALID_TOPIC_EXCEPTION, ZERO_UUID)
    # a limit is at least one partition; a used-up limit points the cursor at the next topic, known or not
    assert _pages(_describe(sock, ["zeta", "missing", "audit"], limit=0)) == (
        [("audit", [0])],
        ("missing", 0),
    )
    # the cursor's topic must be named; its partition must not be negative
    for names, cursor in ((["audit"], ("orders", 0)), (["orders"], ("orders", -1))):
        refused = _describe(sock, names, cursor=cursor)
        assert [(t["name"], t["error_code"], t["partitions"]) for t in refused["topics"]] == [
            (names[0], E.INVALID_REQUEST, [])
        ]
        assert refused["next_cursor"] is None
    # only topics from the cursor's name on
    assert _pages(_describe(sock, ["audit", "orders", "zeta"], cursor=("orders", 2))) == (
        [("orders", [2]), ("zeta", [0, 1])], None,
    )  # fmt: skip


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs_answers_as_a_one_directory_broker(
    server: KcoordServer, sock: socket.socket, version: int
) -> None:
    own = os.path.abspath(server.data_dir / "topics")
    here = [{"name": "orders", "partitions": [0, 5]}, {"name": "nope", "partitions": [0]}]
    body = {"dirs": [
        {"path": own, "topics": here},
        {"path": "/elsewhere", "topics": [{"name": "audit", "partitions": [0]}]},
        {"path": own, "topics": [{"name": "x" * 240, "partitions": [0]}]},
    ]}  # fmt: skip
    answer = call(sock, ALTER_REPLICA_LOG_DIRS, version, body)
    results = {
        (t["topic_name"], p["partition_index"]): p["error_code"]
        for t in answer["results"]
        for p in t["partitions"]
    }
    assert results == {
        ("orders", 0): E.NONE,  # already there: nothing to move
        ("orders", 5): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("audit", 0): E.LOG_DIR_NOT_FOUND,
        ("x" * 240, 0): E.INVALID_TOPIC_EXCEPTION,  # its future log's directory name would pass 255
    }


def _quorum(sock: socket.socket, version: int, topic: str = "__cluster_metadata", partition: int = 0) -> Any:
    body = {"topics": [{"topic_name": topic, "partitions": [{"partition_index": partition}]}]}
    return call(sock, DESCRIBE_QUORUM, version, body)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_tells_one_voter_caught_up(
    server: KcoordServer, sock: socket.socket, version: int
) -> None:
    answer = _quorum(sock, version)
    assert answer["error_code"] == E.NONE
    ((topic),) = answer["topics"]
    (partition,) = topic["partitions"]
    assert (topic["topic_name"], partition["partition_index"], partition["error_code"]) == (
        "__cluster_metadata",
        0,
        0,
    )
    assert (partition["leader_id"], partition["leader_epoch"], partition["observers"]) == (0, 1, [])
    (voter,) = partition["current_voters"]
    assert (
        voter["replica_id"] == 0 and voter["log_end_offset"] == partition["high_watermark"] >= 3
    )  # 3 topics
    if version >= 1:
        assert voter["last_fetch_timestamp"] == voter["last_caught_up_timestamp"] > 0
    if version >= 2:
        assert answer["nodes"] == [
            {
                "node_id": 0,
                "listeners": [{"name": "PLAINTEXT", "host": server.address[0], "port": server.address[1]}],
            }
        ]
    refused = _quorum(sock, version, partition=1)["topics"][0]["partitions"][0]
    assert refused["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION


def _update(
    sock: socket.socket, version: int, updates: list[tuple[str, int, int]], validate_only: bool = False
) -> Any:
    keys = []
    for feature, level, upgrade_type in updates:
        key: dict[str, Any] = {"feature": feature, "max_version_level": level}
        if version == 0:
            key["allow_downgrade"] = upgrade_type != 1
        else:
            key["upgrade_type"] = upgrade_type
        keys.append(key)
    body: dict[str, Any] = {"timeout_ms": 5000, "feature_updates": keys}
    if version >= 1:
        body["validate_only"] = validate_only
    return call(sock, UPDATE_FEATURES, version, body)


DOWNGRADE_NEEDS_TYPE = (
    "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe "
    "downgrade."
)
STARTUP_LEVEL = " ".join(
    (
        "kcoord finalizes transaction.version at startup (--transaction-version);",
        "it does not change while running.",
    )
)


def _invalid(level: int, feature: str, reason: str) -> tuple[int, str]:
    return E.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {feature}. {reason}"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_checks_as_the_controller_and_keeps_the_startup_level(
    sock: socket.socket, version: int
) -> None:
    same = _update(sock, version, [("transaction.version", 2, 1)])  # --transaction-version 2 (default)
    assert (same["error_code"], same["error_message"]) == (E.NONE, None)
    if version < 2:
        assert same["results"] == [{"feature": "transaction.version", "error_code": 0, "error_message": None}]
    tv = "transaction.version"
    cases = [
        ((tv, 3, 1), _invalid(3, tv, "Local controller 0 only supports versions 0-2")),
        ((tv, 1, 1), _invalid(1, tv, DOWNGRADE_NEEDS_TYPE)),
        ((tv, 1, 2), _invalid(1, tv, STARTUP_LEVEL)),
        (
            ("group.version", 1, 1),
            _invalid(1, "group.version", "Local controller 0 does not support this feature."),
        ),
        (("group.version", 0, 1), _invalid(0, "group.version", "Feature group.version not found.")),
        ((tv, -1, 2), _invalid(-1, tv, "A feature version cannot be less than 0.")),
    ]
    if version >= 1:
        cases.append(((tv, 2, 7), _invalid(2, tv, "The controller does not support the given upgrade type.")))
    for update, expected in cases:
        answer = _update(sock, version, [update])
        assert (answer["error_code"], answer["error_message"]) == expected
        assert answer["results"] == []  # per-feature results only when the whole request succeeds
    # the level is still the startup one (ApiVersions' finalized features)
    hello = {"client_software_name": "kcoord-test", "client_software_version": "1"}
    finalized = call(sock, 18, 4, hello)["finalized_features"]
    assert [(f["name"], f["max_version_level"]) for f in finalized] == [("transaction.version", 2)]
