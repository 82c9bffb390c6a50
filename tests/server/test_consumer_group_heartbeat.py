"""The consumer protocol (KIP-848) over raw sockets: exact ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69) requests and the answers Kafka gives, plus what the other group APIs answer
about a consumer group (ListGroups, OffsetCommit, DeleteGroups).

Each test names the Kafka method whose answer it expects (GroupCoordinatorService for the request
checks, GroupMetadataManager for the rest).
"""

from __future__ import annotations

import socket
import uuid
from typing import Any

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT as UNCHANGED
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic, read_frame

API_VERSIONS, METADATA, OFFSET_COMMIT, LIST_GROUPS, DELETE_GROUPS = 18, 3, 8, 16, 42
HEARTBEAT, DESCRIBE = 68, 69
HEARTBEAT_INTERVAL_MS = 5000  # group.consumer.heartbeat.interval.ms, Kafka's default
REBALANCE_TIMEOUT_MS = 30_000


def _heartbeat(
    sock: socket.socket, group: str, member_id: str, epoch: int, version: int = 1, **fields: Any
) -> dict[str, Any]:
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, **UNCHANGED, **fields}
    return call(sock, HEARTBEAT, version, body)


def _join_body(group: str, member_id: str, topics: tuple[str, ...] = ("t",), **fields: Any) -> dict[str, Any]:
    """A first heartbeat as a client sends it: epoch 0, a rebalance timeout, topics, nothing owned."""
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        **UNCHANGED,
        "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
        "subscribed_topic_names": list(topics),
        "topic_partitions": [],
        **fields,
    }


def _join(sock: socket.socket, group: str, member_id: str, version: int = 1, **fields: Any) -> dict[str, Any]:
    return call(sock, HEARTBEAT, version, _join_body(group, member_id, **fields))


def _refused(code: ErrorCode, message: str) -> dict[str, Any]:
    """Kafka's answer to a refused heartbeat: the code and message, every other field its default."""
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


def _topic_id(sock: socket.socket, name: str) -> uuid.UUID:
    metadata = call(sock, METADATA, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]})
    (topic,) = metadata["topics"]
    assert topic["error_code"] == 0
    return topic["topic_id"]  # type: ignore[no-any-return]


def _describe(sock: socket.socket, group: str, version: int = 1) -> dict[str, Any]:
    body = {"group_ids": [group], "include_authorized_operations": False}
    (described,) = call(sock, DESCRIBE, version, body)["groups"]
    return described  # type: ignore[no-any-return]


def _setup(sock: socket.socket, partitions: int = 3) -> uuid.UUID:
    assert create_topic(sock, "t", partitions)["error_code"] == 0
    return _topic_id(sock, "t")


def test_api_versions_advertises_consumer_group_heartbeat_and_describe_v0_to_v1(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        response = call(sock, API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert advertised[HEARTBEAT] == (0, 1) and advertised[DESCRIBE] == (0, 1)


def test_first_heartbeat_gets_epoch_2_the_heartbeat_interval_and_every_partition(
    server: KcoordServer,
) -> None:
    # GroupMetadataManager.consumerGroupHeartbeat: a new member of a new group bumps the group epoch to
    # 1, the assignor gives it every partition and, nothing to revoke, it is at epoch 1 at once.
    with connect(server.address) as sock:
        topic_id = _setup(sock)
        assert _join(sock, "g", "m1") == {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": "m1",
            "member_epoch": 2,  # a group starts at epoch 1 (Kafka 4.3's ModernGroup); joining bumps it
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            "assignment": {"topic_partitions": [{"topic_id": topic_id, "partitions": [0, 1, 2]}]},
        }
        # The next heartbeat reports what it owns; nothing changed, so no assignment is sent.
        owned = [{"topic_id": topic_id, "partitions": [0, 1, 2]}]
        steady = _heartbeat(sock, "g", "m1", 2, topic_partitions=owned)
        assert (steady["error_code"], steady["member_epoch"], steady["assignment"]) == (0, 2, None)
        assert steady["heartbeat_interval_ms"] == HEARTBEAT_INTERVAL_MS


def test_v0_first_heartbeat_without_member_id_gets_one_from_the_coordinator(server: KcoordServer) -> None:
    # v0 predates KIP-1082: the coordinator names the member on its first heartbeat.
    with connect(server.address) as sock:
        _setup(sock)
        joined = _join(sock, "g", "", version=0)
        assert joined["error_code"] == 0 and joined["member_epoch"] == 2 and joined["member_id"]
        again = _heartbeat(sock, "g", joined["member_id"], 2, version=0)
        assert (again["error_code"], again["member_id"], again["member_epoch"]) == (0, joined["member_id"], 2)


def test_v1_with_an_empty_member_id_is_invalid_request(server: KcoordServer) -> None:
    # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid: from v1 (KIP-1082) the
    # client names itself, joining included.
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "") == _refused(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        assert _describe(sock, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND  # nothing was written


def test_joining_without_a_rebalance_timeout_is_invalid_request(server: KcoordServer) -> None:
    # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid (epoch 0)
    with connect(server.address) as sock:
        _setup(sock)
        answer = _join(sock, "g", "m1", rebalance_timeout_ms=-1)
        assert answer == _refused(
            ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
        )


def test_an_unknown_server_assignor_is_unsupported_assignor(server: KcoordServer) -> None:
    # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, which lists the
    # assignors group.consumer.assignors configures (uniform, range by default).
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1", server_assignor="sticky") == _refused(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        )
        assert _join(sock, "g", "m1", server_assignor="range")["error_code"] == 0


def test_an_invalid_regex_is_invalid_regular_expression(server: KcoordServer) -> None:
    # Utils.throwIfRegularExpressionIsInvalid (RE2/J): nothing is written for the member.
    with connect(server.address) as sock:
        _setup(sock)
        answer = _join(sock, "g", "m1", subscribed_topic_names=None, subscribed_topic_regex="t[")
        assert answer["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert answer["error_message"].startswith(
            "SubscribedTopicRegex `t[` is not a valid regular expression"
        )
        assert answer["member_epoch"] == 0 and answer["assignment"] is None
        assert _describe(sock, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        # A valid one subscribes the member to the topics it matches.
        joined = _join(sock, "g", "m1", subscribed_topic_names=None, subscribed_topic_regex="t.*")
        assert joined["error_code"] == 0 and joined["assignment"]["topic_partitions"][0]["partitions"] == [
            0,
            1,
            2,
        ]


def test_a_greater_member_epoch_is_fenced(server: KcoordServer) -> None:
    # GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["member_epoch"] == 2
        answer = _heartbeat(sock, "g", "m1", 3)
        assert answer == _refused(
            ErrorCode.FENCED_MEMBER_EPOCH,
            "The consumer group member has a greater member epoch (3) than the one known by the group "
            "coordinator (2). The member must abandon all its partitions and rejoin.",
        )
        assert _heartbeat(sock, "g", "m1", 2)["error_code"] == 0  # it is still a member


def test_an_unknown_member_is_unknown_member_id(server: KcoordServer) -> None:
    # ConsumerGroup.getOrMaybeCreateMember(memberId, false) for a member that is not at epoch 0; a
    # group that does not exist is GROUP_ID_NOT_FOUND (getOrMaybeCreateConsumerGroup).
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["error_code"] == 0
        assert _heartbeat(sock, "g", "stranger", 2) == _refused(
            ErrorCode.UNKNOWN_MEMBER_ID, "Member stranger is not a member of group g."
        )
        missing = _heartbeat(sock, "nope", "m1", 1)
        assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_leaving_answers_epoch_minus_1_and_empties_the_group(server: KcoordServer) -> None:
    # GroupMetadataManager.consumerGroupLeave: the member id and the epoch it sent, nothing else.
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["member_epoch"] == 2
        assert _heartbeat(sock, "g", "m1", -1) == {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": "m1",
            "member_epoch": -1,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        }
        described = _describe(sock, "g")
        assert (described["group_state"], described["group_epoch"], described["members"]) == ("Empty", 3, [])
        assert _heartbeat(sock, "g", "m1", 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_describe_describes_the_group_and_its_member(server: KcoordServer) -> None:
    # ConsumerGroup.asDescribedGroup, ConsumerGroupMember.asConsumerGroupDescribeMember
    with connect(server.address) as sock:
        topic_id = _setup(sock)
        assert _join(sock, "g", "m1", rack_id="r1")["member_epoch"] == 2
        assignment = {
            "topic_partitions": [{"topic_id": topic_id, "topic_name": "t", "partitions": [0, 1, 2]}]
        }
        member = {
            "member_id": "m1",
            "instance_id": None,
            "rack_id": "r1",
            "member_epoch": 2,
            "client_id": "kcoord-test",
            "client_host": "/127.0.0.1",
            "subscribed_topic_names": ["t"],
            "subscribed_topic_regex": "",  # ConsumerGroupMember.Builder's default: never sent, not null
            "assignment": assignment,
            "target_assignment": assignment,
        }
        group = {
            "error_code": 0,
            "error_message": None,
            "group_id": "g",
            "group_state": "Stable",
            "group_epoch": 2,
            "assignment_epoch": 2,
            "assignor_name": "uniform",
            "authorized_operations": -(2**31),
        }
        assert _describe(sock, "g", version=1) == {**group, "members": [{**member, "member_type": 1}]}
        # v0 has no member type on the wire: it decodes to the field's default, -1 (unknown).
        assert _describe(sock, "g", version=0) == {**group, "members": [{**member, "member_type": -1}]}


def test_consumer_group_describe_of_a_missing_group_is_group_id_not_found(server: KcoordServer) -> None:
    # GroupMetadataManager.consumerGroupDescribe: GroupIdNotFoundException's message.
    with connect(server.address) as sock:
        described = _describe(sock, "missing")
        assert (described["group_id"], described["error_code"], described["error_message"]) == (
            "missing",
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Group missing not found.",
        )
        assert described["members"] == []


def test_list_groups_v5_lists_a_consumer_group_with_group_type_consumer(server: KcoordServer) -> None:
    # GroupMetadataManager.listGroups: ConsumerGroup.asListedGroup
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["error_code"] == 0
        listed = call(sock, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        assert listed["error_code"] == 0
        assert listed["groups"] == [
            {"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "consumer"}
        ]
        by_type = call(sock, LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]})
        assert by_type["groups"] == []


def _commit_body(group: str, member_id: str, epoch: int) -> dict[str, Any]:
    return {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
        "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
             "committed_metadata": ""},
        ]}],
    }  # fmt: skip


def _commit_error(sock: socket.socket, version: int, body: dict[str, Any]) -> int:
    return int(call(sock, OFFSET_COMMIT, version, body)["topics"][0]["partitions"][0]["error_code"])


def test_offset_commit_checks_the_member_epoch_and_version_of_a_consumer_protocol_member(
    server: KcoordServer,
) -> None:
    # ConsumerGroup.validateOffsetCommit: v9+ for a member of the consumer protocol, at its epoch.
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["member_epoch"] == 2
        assert _commit_error(sock, 9, _commit_body("g", "m1", 0)) == ErrorCode.STALE_MEMBER_EPOCH
        assert _commit_error(sock, 9, _commit_body("g", "m1", 3)) == ErrorCode.STALE_MEMBER_EPOCH
        assert _commit_error(sock, 8, _commit_body("g", "m1", 2)) == ErrorCode.UNSUPPORTED_VERSION
        assert _commit_error(sock, 9, _commit_body("g", "stranger", 2)) == ErrorCode.UNKNOWN_MEMBER_ID
        # Epoch -1 (admin tools) commits only to an empty group.
        assert _commit_error(sock, 9, _commit_body("g", "", -1)) == ErrorCode.UNKNOWN_MEMBER_ID
        assert _commit_error(sock, 9, _commit_body("g", "m1", 2)) == ErrorCode.NONE


def test_delete_groups_refuses_a_group_with_a_member_and_deletes_it_once_empty(server: KcoordServer) -> None:
    # ConsumerGroup.validateDeleteGroup: NON_EMPTY_GROUP unless the group is empty.
    with connect(server.address) as sock:
        _setup(sock)
        assert _join(sock, "g", "m1")["member_epoch"] == 2
        deleted = call(sock, DELETE_GROUPS, 2, {"groups_names": ["g"]})["results"]
        assert deleted == [{"group_id": "g", "error_code": ErrorCode.NON_EMPTY_GROUP}]
        assert _heartbeat(sock, "g", "m1", -1)["error_code"] == 0
        deleted = call(sock, DELETE_GROUPS, 2, {"groups_names": ["g"]})["results"]
        assert deleted == [{"group_id": "g", "error_code": ErrorCode.NONE}]
        assert _describe(sock, "g")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert call(sock, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"] == []


def test_two_pipelined_joins_are_answered_in_order_and_the_second_sees_group_epoch_3(
    server: KcoordServer,
) -> None:
    # One socket write: the second heartbeat is decided against the group the first one left (Kafka's
    # timeline state), so its member joins at group epoch 3; answers keep the request order.
    with connect(server.address) as sock:
        topic_id = _setup(sock)
        frames = [
            encode_request(HEARTBEAT, 1, correlation_id, _join_body("g", member_id), client_id="pipelined")
            for correlation_id, member_id in ((10, "m1"), (11, "m2"))
        ]
        sock.sendall(b"".join(frames))
        answers = [decode_response(HEARTBEAT, 1, read_frame(sock)) for _ in frames]
        assert [correlation_id for correlation_id, _ in answers] == [10, 11]
        (_, first), (_, second) = answers
        assert (first["error_code"], first["member_id"], first["member_epoch"]) == (0, "m1", 2)
        assert first["assignment"] == {"topic_partitions": [{"topic_id": topic_id, "partitions": [0, 1, 2]}]}
        # m2's target partitions are still m1's until m1 revokes them: it gets epoch 3 with none yet.
        assert (second["error_code"], second["member_id"], second["member_epoch"]) == (0, "m2", 3)
        assert second["assignment"] == {"topic_partitions": []}
        described = _describe(sock, "g")
        assert (described["group_epoch"], described["assignment_epoch"]) == (3, 3)
        epochs = {m["member_id"]: m["member_epoch"] for m in described["members"]}
        assert epochs == {"m1": 2, "m2": 3}
