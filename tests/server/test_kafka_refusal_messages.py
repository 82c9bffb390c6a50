"""Refusals and messages as Kafka 4.3 words them, on the paths tests/oracle does not walk: the order of
CreateTopics' checks, a manual assignment with a partition count, a topic named twice in
CreatePartitions, and FindCoordinator's error_message in v1-3 and for a refused v4+ key."""

from __future__ import annotations

from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

CREATE_TOPICS, CREATE_PARTITIONS, FIND_COORDINATOR = 19, 37, 10


def _refusal(result: dict[str, Any]) -> tuple[int, str | None]:
    return result["error_code"], result["error_message"]


def test_create_topics_checks_as_kafkas_controller(server: KcoordServer) -> None:
    # ReplicationControlManager.createTopic: the replication factor before the partition count; with
    # assignments, the replication factor, then the partition count, must be -1.
    with connect(server.address) as sock:
        both_bad = create_topic(sock, "both-bad", 0, replication_factor=0)
        assert _refusal(both_bad) == (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
        too_many = create_topic(sock, "too-many", 0, replication_factor=3)  # placement comes last
        assert _refusal(too_many)[0] == ErrorCode.INVALID_PARTITIONS
        manual = [{"partition_index": 0, "broker_ids": [0]}]
        counted = create_topic(sock, "counted", 2, replication_factor=-1, assignments=manual)
        assert _refusal(counted) == (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
        assert create_topic(sock, "manual", -1, replication_factor=-1, assignments=manual)["error_code"] == 0
        invalid = create_topic(sock, "it's", 1)
        assert _refusal(invalid) == (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'it's' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'",
        )


def test_create_partitions_refuses_a_topic_named_twice(server: KcoordServer) -> None:
    # ControllerApis.createPartitions: one INVALID_REQUEST result for the name, the others go on.
    with connect(server.address) as sock:
        assert create_topic(sock, "twice", 1)["error_code"] == 0
        assert create_topic(sock, "once", 1)["error_code"] == 0
        grow = [{"name": n, "count": 2, "assignments": None} for n in ("twice", "twice", "once")]
        results = call(
            sock, CREATE_PARTITIONS, 3, {"topics": grow, "timeout_ms": 5000, "validate_only": False}
        )
        by_name = {r["name"]: _refusal(r) for r in results["results"]}
        assert by_name == {"twice": (ErrorCode.INVALID_REQUEST, "Duplicate topic name."), "once": (0, None)}


def test_find_coordinator_error_messages_as_kafka_sends_them(server: KcoordServer) -> None:
    # KafkaApis.handleFindCoordinatorRequestLessThanV4 sets Errors.NONE.message() ("NONE");
    # handleFindCoordinatorRequestV4AndAbove never sets one: "" (the field's default), refusals too.
    with connect(server.address) as sock:
        found = call(sock, FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
        assert (found["error_code"], found["error_message"]) == (0, "NONE")
        body = {"key_type": 2, "coordinator_keys": ["g:t:0"]}  # no share coordinator here
        (refused,) = call(sock, FIND_COORDINATOR, 4, body)["coordinators"]
        assert (refused["error_code"], refused["error_message"]) == (ErrorCode.INVALID_REQUEST, "")
        (group,) = call(sock, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]})["coordinators"]
        assert (group["error_code"], group["error_message"]) == (0, "")


_INCLUDES = "The manual partition assignment includes"


def test_manual_assignments_are_checked_as_kafkas_controller(server: KcoordServer) -> None:
    # ReplicationControlManager.createTopic / createPartitions -> validateManualPartitionAssignment: each
    # partition once, each list non-empty, of registered brokers (this node alone) named once, all as long
    # as the first (CreatePartitions: as the topic's factor), then the indexes consecutive from 0.
    def manual(name: str, *lists: tuple[int, list[int]]) -> tuple[int, str | None]:
        assignments = [{"partition_index": p, "broker_ids": b} for p, b in lists]
        return _refusal(create_topic(sock, name, -1, replication_factor=-1, assignments=assignments))

    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    with connect(server.address) as sock:
        assert manual("m-twice", (0, [0]), (0, [0])) == (
            invalid, "Found multiple manual partition assignments for partition 0"
        )  # fmt: skip
        assert manual("m-empty", (0, [0]), (1, [])) == (invalid, f"{_INCLUDES} an empty replica list.")
        assert manual("m-unknown", (0, [7])) == (
            invalid, f"{_INCLUDES} broker 7, but no such broker is registered."
        )  # fmt: skip
        assert manual("m-repeated", (0, [0, 0])) == (invalid, f"{_INCLUDES} the broker 0 more than once.")
        assert manual("m-gap", (0, [0]), (2, [0])) == (
            invalid, "partitions should be a consecutive 0-based integer sequence"
        )  # fmt: skip
        assert manual("m-good", (1, [0]), (0, [0])) == (0, None)
        grow = {"name": "m-good", "count": 4, "assignments": [{"broker_ids": [0]}, {"broker_ids": [0, 7]}]}
        body = {"topics": [grow], "timeout_ms": 5000, "validate_only": False}
        (grown,) = call(sock, CREATE_PARTITIONS, 3, body)["results"]
        assert _refusal(grown) == (invalid, f"{_INCLUDES} broker 7, but no such broker is registered.")
        grow["assignments"] = [{"broker_ids": [0]}, {"broker_ids": [0]}]
        (grown,) = call(sock, CREATE_PARTITIONS, 3, body)["results"]
        assert _refusal(grown) == (0, None)
