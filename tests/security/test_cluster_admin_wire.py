"""Authorization of ElectLeaders, Alter/ListPartitionReassignments and DescribeLogDirs on the wire
(raw sockets, User:ANONYMOUS): ALTER on the cluster for the first two (ControllerApis.handleElectLeaders /
handleAlterPartitionReassignments), DESCRIBE for the others (handleListPartitionReassignments,
KafkaApis.handleDescribeLogDirsRequest); a refusal is each request's getErrorResponse."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import ALTER, CLUSTER, DESCRIBE, binding, create_acls
from tests.server.wire import call, connect, create_topic

BOB = "User:bob"
DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
NOT_AUTHORIZED = "Request is not authorized."


def _calls(sock: socket.socket, elect_version: int) -> dict[str, Any]:
    elect = {
        "election_type": 0,
        "topic_partitions": [{"topic": "t", "partitions": [0, 1]}],
        "timeout_ms": 1000,
    }
    if elect_version == 0:
        del elect["election_type"]
    alter = {
        "timeout_ms": 1000,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [0]}]}],
    }
    listed = {"timeout_ms": 1000, "topics": [{"name": "t", "partition_indexes": [1]}]}
    return {
        "elect": call(sock, 43, elect_version, elect),
        "alter": call(sock, 45, 0, alter),
        "list": call(sock, 46, 0, listed),
        "log_dirs": {v: call(sock, 35, v, {"topics": None}) for v in (2, 3)},
    }


def _bootstrap(sock: socket.socket, *acls: dict[str, Any]) -> None:
    assert create_topic(sock, "t", 2)["error_code"] == 0
    assert create_acls(sock, *acls) == [0] * len(acls)  # one request: afterwards ANONYMOUS may not ALTER


@pytest.mark.parametrize("elect_version", (0, 2))
def test_without_alter_or_describe_on_the_cluster_every_call_is_refused_as_kafka(
    acl_server: KcoordServer, elect_version: int
) -> None:
    with connect(acl_server.address) as sock:
        _bootstrap(sock, binding(CLUSTER, "kafka-cluster", ALTER, principal=BOB))
        got = _calls(sock, elect_version)
    elect = got["elect"]
    assert elect["error_code"] == (DENIED if elect_version >= 1 else 0)  # v0 has no top-level code
    assert [
        (p["partition_id"], p["error_code"], p["error_message"])
        for p in elect["replica_election_results"][0]["partition_result"]
    ] == [(0, DENIED, NOT_AUTHORIZED), (1, DENIED, NOT_AUTHORIZED)]
    alter = got["alter"]
    assert (alter["error_code"], alter["error_message"]) == (DENIED, NOT_AUTHORIZED)
    assert alter["responses"] == [
        {
            "name": "t",
            "partitions": [{"partition_index": 0, "error_code": DENIED, "error_message": NOT_AUTHORIZED}],
        }
    ]
    listed = got["list"]
    assert (listed["error_code"], listed["error_message"]) == (DENIED, NOT_AUTHORIZED)
    assert listed["topics"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 1, "replicas": [], "adding_replicas": [], "removing_replicas": []}
            ],
        }
    ]
    # v3 carries the error; v2 can only say nothing
    assert got["log_dirs"][2] == {"throttle_time_ms": 0, "error_code": 0, "results": []}
    assert got["log_dirs"][3] == {"throttle_time_ms": 0, "error_code": DENIED, "results": []}


def test_describe_on_the_cluster_lists_and_describes_but_does_not_elect_or_reassign(
    acl_server: KcoordServer,
) -> None:
    with connect(acl_server.address) as sock:
        _bootstrap(
            sock,
            binding(CLUSTER, "kafka-cluster", ALTER, principal=BOB),
            binding(CLUSTER, "kafka-cluster", DESCRIBE),
        )
        got = _calls(sock, 2)
    assert got["elect"]["error_code"] == DENIED
    assert got["alter"]["error_code"] == DENIED
    assert (got["list"]["error_code"], got["list"]["topics"]) == (0, [])
    (log_dir,) = got["log_dirs"][3]["results"]
    assert [t["name"] for t in log_dir["topics"]] == ["t"]


def test_alter_on_the_cluster_allows_all_four(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        _bootstrap(sock, binding(CLUSTER, "kafka-cluster", ALTER))  # ALTER implies DESCRIBE
        got = _calls(sock, 1)
    assert {p["error_code"] for p in got["elect"]["replica_election_results"][0]["partition_result"]} == {
        ErrorCode.ELECTION_NOT_NEEDED
    }
    assert got["alter"]["responses"][0]["partitions"][0]["error_code"] == 0
    assert got["list"]["error_code"] == 0 and got["log_dirs"][3]["error_code"] == 0
