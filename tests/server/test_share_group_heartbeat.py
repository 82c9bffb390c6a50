"""Share groups (KIP-932) over raw sockets: ShareGroupHeartbeat (76) and ShareGroupDescribe (77) as
Kafka 4.3 answers them, what ListGroups, DeleteGroups and JoinGroup answer about a share group, and
the group surviving a restart of the server.

Each test names the Kafka method whose answer it expects (GroupCoordinatorService for the request
checks, GroupMetadataManager for the rest).
"""

from __future__ import annotations

import socket
import uuid
from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

API_VERSIONS, METADATA, JOIN_GROUP, LIST_GROUPS, DELETE_GROUPS = 18, 3, 11, 16, 42
CONSUMER_HEARTBEAT, SHARE_HEARTBEAT, SHARE_DESCRIBE = 68, 76, 77


def _hb(
    sock: socket.socket, group: str, member: str, epoch: int, topics: list[str] | None = None
) -> dict[str, Any]:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": topics}  # fmt: skip
    return call(sock, SHARE_HEARTBEAT, 1, body)


def _describe(sock: socket.socket, *groups: str, ops: bool = False) -> list[dict[str, Any]]:
    body = {"group_ids": list(groups), "include_authorized_operations": ops}
    return call(sock, SHARE_DESCRIBE, 1, body)["groups"]  # type: ignore[no-any-return]


def _topic_id(sock: socket.socket, name: str) -> uuid.UUID:
    metadata = call(sock, METADATA, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]})
    (topic,) = metadata["topics"]
    return topic["topic_id"]  # type: ignore[no-any-return]


def _list(sock: socket.socket, types: list[str]) -> list[tuple[str, str, str, str]]:
    listed = call(sock, LIST_GROUPS, 5, {"states_filter": [], "types_filter": types})["groups"]
    return sorted((g["group_id"], g["protocol_type"], g["group_state"], g["group_type"]) for g in listed)


def _recompute_at_every_change(sock: socket.socket, group: str) -> None:
    """The group's share.assignment.interval.ms set to 0: its target is recomputed at every change
    (Kafka 4.3 waits 1 s by default between two, which a test would have to wait out)."""
    entry = {"name": "share.assignment.interval.ms", "config_operation": 0, "value": "0"}
    body = {
        "resources": [{"resource_type": 32, "resource_name": group, "configs": [entry]}],
        "validate_only": False,
    }
    assert call(sock, 44, 1, body)["responses"][0]["error_code"] == 0


def test_api_versions_advertise_share_group_heartbeat_and_describe_v1(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        response = call(sock, API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert advertised[SHARE_HEARTBEAT] == (1, 1) and advertised[SHARE_DESCRIBE] == (1, 1)


def test_join_share_describe_list_leave_delete(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 2)["error_code"] == 0
        topic_id = _topic_id(sock, "t")
        _recompute_at_every_change(sock, "sg")
        # As Kafka 4.3: the first heartbeat gets no partition, their share state is initialized after it
        # (the group epoch bumped to 3), and the next heartbeat gets them.
        first = _hb(sock, "sg", "m1", 0, ["t"])
        assert first == {
            "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m1",
            "member_epoch": 2, "heartbeat_interval_ms": 5000, "assignment": {"topic_partitions": []},
        }  # fmt: skip
        assigned = _hb(sock, "sg", "m1", 2)
        assert (assigned["member_epoch"], assigned["assignment"]) == (
            3, {"topic_partitions": [{"topic_id": topic_id, "partitions": [0, 1]}]}
        )  # fmt: skip
        second = _hb(sock, "sg", "m2", 0, ["t"])
        assert second["member_epoch"] == 4
        moved = _hb(sock, "sg", "m1", 3)
        assert moved["member_epoch"] == 4
        parts = [moved["assignment"]["topic_partitions"][0]["partitions"],
                 second["assignment"]["topic_partitions"][0]["partitions"]]  # fmt: skip
        assert sorted(p for ps in parts for p in ps) == [0, 1] and all(len(ps) == 1 for ps in parts)
        (described,) = _describe(sock, "sg", ops=True)
        summary = (described["group_state"], described["group_epoch"], described["assignor_name"])
        assert summary == ("Stable", 4, "simple")
        # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: 3400, as Kafka 4.3 answers without ACLs
        assert described["authorized_operations"] == 3400
        assert sorted(m["member_id"] for m in described["members"]) == ["m1", "m2"]
        assert _list(sock, ["share"]) == [("sg", "share", "Stable", "share")]
        assert _list(sock, ["consumer"]) == []
        # DeleteGroups refuses a group with members (ShareGroup.validateDeleteGroup)
        deleted = call(sock, DELETE_GROUPS, 2, {"groups_names": ["sg"]})["results"]
        assert deleted[0]["error_code"] == ErrorCode.NON_EMPTY_GROUP
        assert _hb(sock, "sg", "m1", -1) | {"assignment": None} == {
            "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m1",
            "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None,
        }  # fmt: skip
        assert _hb(sock, "sg", "m2", -1)["error_code"] == 0
        assert _list(sock, ["share"]) == [("sg", "share", "Empty", "share")]
        deleted = call(sock, DELETE_GROUPS, 2, {"groups_names": ["sg"]})["results"]
        assert deleted[0]["error_code"] == 0
        (gone,) = _describe(sock, "sg")
        assert (gone["error_code"], gone["error_message"]) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Group sg not found.",
        )


def test_refusals(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        invalid = _hb(sock, "sg", "m1", 0, None)
        assert (invalid["error_code"], invalid["error_message"]) == (
            ErrorCode.INVALID_REQUEST,
            "SubscribedTopicNames must be set in first request.",
        )
        missing = _hb(sock, "sg", "m1", 5)
        assert (missing["error_code"], missing["error_message"]) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Share group sg not found.",
        )
        assert _hb(sock, "sg", "m1", 0, ["t"])["error_code"] == 0
        fenced = _hb(sock, "sg", "m1", 7)
        assert fenced["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
        unknown = _hb(sock, "sg", "m9", 2)
        assert (unknown["error_code"], unknown["error_message"]) == (
            ErrorCode.UNKNOWN_MEMBER_ID,
            "Member m9 is not a member of group sg.",
        )
        # one id, one type: a consumer member on a share group's id, and a classic JoinGroup
        consumer = call(sock, CONSUMER_HEARTBEAT, 1, {
            "group_id": "sg", "member_id": "c1", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": [],
        })  # fmt: skip
        assert (consumer["error_code"], consumer["error_message"]) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Group sg is not a consumer group.",
        )
        joined = call(sock, JOIN_GROUP, 9, {
            "group_id": "sg", "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None,
        })  # fmt: skip
        assert (joined["error_code"], joined["member_id"]) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        assert _hb(sock, "cg", "c1", 0, ["t"])["error_code"] == 0  # a share group named first
        taken = call(sock, CONSUMER_HEARTBEAT, 1, {
            "group_id": "cg", "member_id": "c1", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": [],
        })  # fmt: skip
        assert taken["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_restart_resumes_the_group(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 3)["error_code"] == 0
        _recompute_at_every_change(sock, "sg")
        _hb(sock, "sg", "m1", 0, ["t"])
        _hb(sock, "sg", "m2", 0, ["t"])
        before = _describe(sock, "sg")
    server.restart()
    with connect(server.address) as sock:
        assert _describe(sock, "sg") == before
        steady = _hb(sock, "sg", "m2", 4)
        assert (steady["error_code"], steady["member_epoch"], steady["assignment"]) == (0, 4, None)


def test_a_deleted_topic_leaves_the_group_and_a_restart_keeps_it_out(server: KcoordServer) -> None:
    """DeleteTopics of a subscribed topic, end to end on a real server: the next heartbeat's target has
    only what is left, a restart replays the group's records (the state-partition cleanup among them,
    whose contents tests/unit/share_groups/test_deleting_topics.py checks) to the same description, and
    the topic created again is initialized and assigned anew."""
    with connect(server.address) as sock:
        for name in ("t", "u"):
            assert create_topic(sock, name, 1)["error_code"] == 0
        u_id = _topic_id(sock, "u")
        _recompute_at_every_change(sock, "sg")
        epoch = _hb(sock, "sg", "m1", 0, ["t", "u"])["member_epoch"]
        epoch = _hb(sock, "sg", "m1", epoch)["member_epoch"]
        deleted = call(
            sock, 20, 6, {"topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}], "timeout_ms": 5000}
        )
        assert deleted["responses"][0]["error_code"] == 0, deleted
        after = _hb(sock, "sg", "m1", epoch)
        assert after["member_epoch"] > epoch
        assert after["assignment"] == {"topic_partitions": [{"topic_id": u_id, "partitions": [0]}]}, after
        before = _describe(sock, "sg")
    server.restart()
    with connect(server.address) as sock:
        assert _describe(sock, "sg") == before
        assert _hb(sock, "sg", "m1", after["member_epoch"])["error_code"] == 0
        assert create_topic(sock, "t", 1)["error_code"] == 0
        t_id = _topic_id(sock, "t")
        epoch = after["member_epoch"]
        for _ in range(3):  # the new topic's initialization bumps the epoch, the next heartbeat assigns it
            answer = _hb(sock, "sg", "m1", epoch)
            epoch = answer["member_epoch"]
            if answer["assignment"] and len(answer["assignment"]["topic_partitions"]) == 2:
                break
        assigned = {t["topic_id"] for t in answer["assignment"]["topic_partitions"]}
        assert assigned == {t_id, u_id}, answer
