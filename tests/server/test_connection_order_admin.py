"""Kafka's per-connection guarantee for the admin, security and group APIs: the write and the reads that
observe it in one send on one raw socket (see test_connection_order.py). DescribeTopicPartitions (75)
is not served yet: Metadata stands for it."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT
from tests.kcoord_process import KcoordServer
from tests.server.order_wire import (
    ALLOW,
    LIST_GROUPS,
    LITERAL,
    READ,
    TOPIC_RESOURCE,
    Request,
    acl_filter,
    describe_configs,
    describe_groups,
    metadata,
    pipelined,
    retention_ms,
    serve,
    topic,
)
from tests.server.wire import call, connect

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    yield from serve(tmp_path_factory)


@pytest.fixture
def sock(server: KcoordServer) -> Iterator[socket.socket]:
    with connect(server.address) as s:
        yield s


# -- topics and configs --------------------------------------------------------------------------------
def _metadata_partitions(response: dict[str, Any]) -> tuple[int, int]:
    """(error code, partitions) of the only topic in a Metadata answer."""
    (found,) = response["topics"]
    return found["error_code"], len(found["partitions"])


def test_metadata_sees_create_topics_create_partitions_and_delete_topics(sock: socket.socket) -> None:
    name = "order-topic-life"
    new = {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
    created, seen = pipelined(sock, (19, 7, {"topics": [new], "timeout_ms": 5000}), metadata(name))
    assert created["topics"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.NONE, 2)
    grow = {"name": name, "count": 5, "assignments": None}
    grown, seen = pipelined(
        sock, (37, 3, {"topics": [grow], "timeout_ms": 5000, "validate_only": False}), metadata(name)
    )
    assert grown["results"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.NONE, 5)
    gone = {"name": name, "topic_id": uuid.UUID(int=0)}
    deleted, seen = pipelined(sock, (20, 6, {"topics": [gone], "timeout_ms": 5000}), metadata(name))
    assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)


def test_describe_configs_sees_alter_configs_and_incremental_alter_configs(sock: socket.socket) -> None:
    name = topic(sock, "order-configs")
    config = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": name,
        "configs": [{"name": "retention.ms", "value": "1234"}],
    }
    altered, described = pipelined(
        sock, (33, 2, {"resources": [config], "validate_only": False}), describe_configs(name)
    )
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    assert retention_ms(described) == "1234"
    config["configs"] = [{"name": "retention.ms", "config_operation": 0, "value": "5678"}]  # SET
    altered, described = pipelined(
        sock, (44, 1, {"resources": [config], "validate_only": False}), describe_configs(name)
    )
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    assert retention_ms(described) == "5678"


# -- ACLs and SCRAM credentials --------------------------------------------------------------------------
def test_describe_acls_sees_create_acls_and_delete_acls(sock: socket.socket) -> None:
    binding = {
        "resource_type": TOPIC_RESOURCE, "resource_name": "order-acl", "resource_pattern_type": LITERAL,
        "principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW,
    }  # fmt: skip
    describe: Request = (29, 3, acl_filter("order-acl"))
    created, described = pipelined(sock, (30, 3, {"creations": [binding]}), describe)
    assert created["results"][0]["error_code"] == ErrorCode.NONE
    (resource,) = described["resources"]
    assert [(a["principal"], a["operation"]) for a in resource["acls"]] == [("User:alice", READ)]
    deleted, described = pipelined(sock, (31, 3, {"filters": [acl_filter("order-acl")]}), describe)
    assert len(deleted["filter_results"][0]["matching_acls"]) == 1
    assert described["resources"] == []


def test_describe_user_scram_credentials_sees_alter_user_scram_credentials(sock: socket.socket) -> None:
    upsert = {
        "name": "order-alice",
        "mechanism": 1,
        "iterations": 8192,
        "salt": b"s" * 16,
        "salted_password": b"p" * 32,
    }
    altered, described = pipelined(
        sock,
        (51, 0, {"deletions": [], "upsertions": [upsert]}),
        (50, 0, {"users": [{"name": "order-alice"}]}),
    )
    assert altered["results"][0]["error_code"] == ErrorCode.NONE
    (result,) = described["results"]
    assert result["error_code"] == ErrorCode.NONE
    assert [(c["mechanism"], c["iterations"]) for c in result["credential_infos"]] == [(1, 8192)]


# -- groups --------------------------------------------------------------------------------------------
def _classic_member(sock: socket.socket, group: str) -> str:
    """A member of a classic group, joined and synced: the group is Stable."""
    body = {
        "group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }  # fmt: skip
    first = call(sock, 11, 5, body)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    joined = call(sock, 11, 5, {**body, "member_id": first["member_id"]})
    assert joined["error_code"] == ErrorCode.NONE
    member = str(joined["member_id"])
    sync = {
        "group_id": group, "generation_id": joined["generation_id"], "member_id": member,
        "group_instance_id": None, "assignments": [{"member_id": member, "assignment": b""}],
    }  # fmt: skip
    assert call(sock, 14, 3, sync)["error_code"] == ErrorCode.NONE
    return member


def test_describe_groups_and_list_groups_see_leave_group_and_delete_groups(sock: socket.socket) -> None:
    group = "order-classic"
    member = _classic_member(sock, group)
    leave = {"group_id": group, "members": [{"member_id": member, "group_instance_id": None, "reason": None}]}
    left, described, listed = pipelined(sock, (13, 5, leave), describe_groups(group), LIST_GROUPS)
    assert left["error_code"] == ErrorCode.NONE
    assert (described["groups"][0]["group_state"], described["groups"][0]["members"]) == ("Empty", [])
    assert {(g["group_id"], g["group_state"]) for g in listed["groups"]} >= {(group, "Empty")}
    deleted, described, listed = pipelined(
        sock, (42, 2, {"groups_names": [group]}), describe_groups(group), LIST_GROUPS
    )
    assert deleted["results"][0]["error_code"] == ErrorCode.NONE
    assert described["groups"][0]["group_state"] == "Dead"
    assert group not in {g["group_id"] for g in listed["groups"]}


def test_consumer_group_describe_sees_the_member_a_heartbeat_joined(sock: socket.socket) -> None:
    group, member = "order-consumer", str(uuid.uuid4())
    join = {
        "group_id": group, "member_id": member, "member_epoch": 0, **UNCHANGED_SINCE_LAST_HEARTBEAT,
        "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["order-unsubscribed"],
        "topic_partitions": [],
    }  # fmt: skip
    joined, described = pipelined(
        sock, (68, 1, join), (69, 1, {"group_ids": [group], "include_authorized_operations": False})
    )
    assert joined["error_code"] == ErrorCode.NONE
    (seen,) = described["groups"]
    assert seen["error_code"] == ErrorCode.NONE
    assert [m["member_id"] for m in seen["members"]] == [member]
