"""Kafka-exact answers at the edges of the group APIs, over raw sockets (issue 12, item 4).

Each test sends the exact sequence and expects what Kafka answers (the Kafka method is named in the
code that implements it, and in docs/compat.md).
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic, read_frame

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 15, 42, 47


def _commit(sock: socket.socket, group: str, partition: int = 0, metadata: str = "", topic: str = "t") -> int:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "committed_offset": 42, "committed_leader_epoch": -1,
             "committed_metadata": metadata},
        ]}],
    }  # fmt: skip
    return int(call(sock, OFFSET_COMMIT, 8, body)["topics"][0]["partitions"][0]["error_code"])


def _describe(sock: socket.socket, group: str) -> dict[str, Any]:
    body = {"groups": [group], "include_authorized_operations": False}
    return call(sock, DESCRIBE_GROUPS, 5, body)["groups"][0]  # type: ignore[no-any-return]


def _join_body(group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }


def test_the_empty_group_id_is_a_group_for_offsets_and_admin_but_not_for_membership(
    server: KcoordServer,
) -> None:
    # GroupCoordinatorService: commitOffsets/fetchOffsets/describeGroups/deleteGroups refuse only
    # a null id ("for backwards compatibility"); join/sync/heartbeat/leave/deleteOffsets refuse "".
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "") == ErrorCode.NONE
        topics = [{"name": "t", "partition_indexes": [0]}]
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "", "topics": topics, "require_stable": False})
        assert fetched["error_code"] == 0 and fetched["topics"][0]["partitions"][0]["committed_offset"] == 42
        batched = call(
            sock, OFFSET_FETCH, 8, {"groups": [{"group_id": "", "topics": None}], "require_stable": False}
        )
        assert batched["groups"][0]["error_code"] == 0 and batched["groups"][0]["topics"]
        described = _describe(sock, "")
        assert described["error_code"] == 0 and described["group_state"] == "Empty"

        assert call(sock, JOIN_GROUP, 5, _join_body(""))["error_code"] == ErrorCode.INVALID_GROUP_ID
        sync = {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                "protocol_type": "consumer", "protocol_name": "range", "assignments": []}  # fmt: skip
        assert call(sock, SYNC_GROUP, 5, sync)["error_code"] == ErrorCode.INVALID_GROUP_ID
        heartbeat = {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None}
        assert call(sock, HEARTBEAT, 4, heartbeat)["error_code"] == ErrorCode.INVALID_GROUP_ID
        leave = {"group_id": "", "members": [{"member_id": "m", "group_instance_id": None}]}
        assert call(sock, LEAVE_GROUP, 4, leave)["error_code"] == ErrorCode.INVALID_GROUP_ID
        delete_offsets = {"group_id": "", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
        assert call(sock, OFFSET_DELETE, 0, delete_offsets)["error_code"] == ErrorCode.INVALID_GROUP_ID

        deleted = call(sock, DELETE_GROUPS, 2, {"groups_names": [""]})["results"]
        assert deleted == [{"group_id": "", "error_code": 0}]


def test_offset_delete_answers_unknown_topics_and_partitions_before_the_group(server: KcoordServer) -> None:
    # KafkaApis.handleDeleteOffsetsRequest + OffsetDeleteResponse.Builder.merge
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "g") == ErrorCode.NONE
        body = {"group_id": "g", "topics": [
            {"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 5}]},
            {"name": "nope", "partitions": [{"partition_index": 0}]},
        ]}  # fmt: skip
        answer = call(sock, OFFSET_DELETE, 0, body)
        assert answer["error_code"] == 0
        errors = {
            (t["name"], p["partition_index"]): p["error_code"]
            for t in answer["topics"]
            for p in t["partitions"]
        }
        assert errors == {
            ("t", 0): ErrorCode.NONE,
            ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == []  # t-0 was deleted
        # A group-level error replaces the whole answer, unknown partitions included.
        missing = call(sock, OFFSET_DELETE, 0, {**body, "group_id": "missing"})
        assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND and missing["topics"] == []


def test_sync_group_v5_without_protocol_type_or_name_is_inconsistent_before_any_other_check(
    server: KcoordServer,
) -> None:
    # KafkaApis.handleSyncGroupRequest: areMandatoryProtocolTypeAndNamePresent, before the coordinator
    with connect(server.address) as sock:
        for missing in ("protocol_type", "protocol_name"):
            sync = {"group_id": "nobody", "generation_id": 7, "member_id": "stranger",
                    "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                    "assignments": [], missing: None}  # fmt: skip
            assert call(sock, SYNC_GROUP, 5, sync)["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_delete_groups_answers_each_distinct_id_once(server: KcoordServer) -> None:
    # KafkaApis.handleDeleteGroupsRequest deduplicates the names
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "a") == ErrorCode.NONE
        results = call(sock, DELETE_GROUPS, 2, {"groups_names": ["a", "b", "a"]})["results"]
        assert results == [
            {"group_id": "a", "error_code": ErrorCode.NONE},
            {"group_id": "b", "error_code": ErrorCode.GROUP_ID_NOT_FOUND},
        ]


def test_offset_metadata_limit_counts_utf16_code_units(server: KcoordServer) -> None:
    # OffsetMetadataManager: metadata.length() (Java String: UTF-16 units) > offset.metadata.max.bytes
    emoji = "\N{GRINNING FACE}"  # one code point, two UTF-16 units
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "g", metadata=emoji * 2048) == ErrorCode.NONE  # 4096 units: at the limit
        assert _commit(sock, "g", metadata=emoji * 2049) == ErrorCode.OFFSET_METADATA_TOO_LARGE


def _pipelined(sock: socket.socket, *requests: tuple[int, int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every request in one write (so none waits for the one before to be durable); the answers."""
    frames = [
        encode_request(key, version, i, body, client_id="edges")
        for i, (key, version, body) in enumerate(requests)
    ]
    sock.sendall(b"".join(frames))
    answers = []
    for i, (key, version, _) in enumerate(requests):
        got, answer = decode_response(key, version, read_frame(sock))
        assert got == i
        answers.append(answer)
    return answers


def _commit_body(group: str, partition: int = 0) -> dict[str, Any]:
    return {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": partition, "committed_offset": 7, "committed_leader_epoch": -1,
             "committed_metadata": ""},
        ]}],
    }  # fmt: skip


@pytest.mark.server_args("--fsync", "always")
def test_delete_groups_after_a_commit_in_flight_deletes_it_and_the_group_stays_deleted(
    server: KcoordServer,
) -> None:
    # GroupMetadataManager.createGroupTombstoneRecords (always a group tombstone) and Java's
    # coordinator applying a commit when it is written: the DeleteGroups right behind it deletes it.
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 2)["error_code"] == 0
        assert _commit(sock, "g", partition=0) == ErrorCode.NONE
        committed, deleted = _pipelined(
            sock,
            (OFFSET_COMMIT, 8, _commit_body("g", partition=1)),
            (DELETE_GROUPS, 2, {"groups_names": ["g"]}),
        )
        assert committed["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        assert deleted["results"] == [{"group_id": "g", "error_code": ErrorCode.NONE}]
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == [] and _describe(sock, "g")["group_state"] == "Dead"
    server.restart()
    with connect(server.address) as sock:
        assert _describe(sock, "g")["group_state"] == "Dead"
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == []


@pytest.mark.server_args("--fsync", "always", "--group-initial-rebalance-delay-ms", "200")
def test_a_group_joined_while_its_deletion_is_in_flight_survives_the_deletion(server: KcoordServer) -> None:
    # Kafka's runtime applies the group tombstone when it is written (timeline state), so the
    # JoinGroup right behind a DeleteGroups makes a new group, which the tombstone's durability
    # must not remove (kcoord used to replay the tombstone once durable, dropping the new group
    # and leaving its JoinGroup unanswered).
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "g") == ErrorCode.NONE
        deleted, joined = _pipelined(
            sock, (DELETE_GROUPS, 2, {"groups_names": ["g"]}), (JOIN_GROUP, 3, _join_body("g"))
        )
        assert deleted["results"] == [{"group_id": "g", "error_code": ErrorCode.NONE}]
        assert joined["error_code"] == ErrorCode.NONE and joined["generation_id"] == 1
        assert joined["leader"] == joined["member_id"]
        assert _describe(sock, "g")["group_state"] == "CompletingRebalance"
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == []


@pytest.mark.server_args("--fsync", "always")
def test_offset_delete_after_a_commit_in_flight_deletes_it(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        delete = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
        _, simple = _pipelined(sock, (OFFSET_COMMIT, 8, _commit_body("g")), (OFFSET_DELETE, 0, delete))
        assert simple["error_code"] == 0 and simple["topics"][0]["partitions"][0]["error_code"] == 0
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == []
    server.restart()
    with connect(server.address) as sock:
        fetched = call(sock, OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False})
        assert fetched["topics"] == []


@pytest.mark.server_args("--fsync", "always")
@pytest.mark.parametrize("version", [7, 8])
def test_offset_fetch_require_stable_sees_the_commit_in_flight_before_it(
    server: KcoordServer, version: int
) -> None:
    # Java's GroupCoordinatorService.fetchOffsets: require_stable runs as a write operation
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "g") == ErrorCode.NONE  # offset 42
        topics = [{"name": "t", "partition_indexes": [0]}]
        if version < 8:
            fetch = {"group_id": "g", "topics": topics, "require_stable": True}
        else:
            fetch = {"groups": [{"group_id": "g", "topics": topics}], "require_stable": True}
        _, fetched = _pipelined(sock, (OFFSET_COMMIT, 8, _commit_body("g")), (OFFSET_FETCH, version, fetch))
        group = fetched if version < 8 else fetched["groups"][0]
        assert group["error_code"] == 0 and group["topics"][0]["partitions"][0]["committed_offset"] == 7


@pytest.mark.server_args("--fsync", "always")
@pytest.mark.parametrize("version", [7, 8])
def test_offset_fetch_require_stable_sees_the_deletions_in_flight_before_it(
    server: KcoordServer, version: int
) -> None:
    # Java's GroupCoordinatorService.fetchOffsets: require_stable runs as a write operation, answered
    # after every earlier write is durable: the tombstones of an OffsetDelete or DeleteGroups too.
    topics = [{"name": "t", "partition_indexes": [0]}]
    if version < 8:
        fetch = {"group_id": "g", "topics": topics, "require_stable": True}
    else:
        fetch = {"groups": [{"group_id": "g", "topics": topics}], "require_stable": True}

    def committed(answer: dict[str, Any]) -> int:
        group = answer if version < 8 else answer["groups"][0]
        assert group["error_code"] == 0
        return int(group["topics"][0]["partitions"][0]["committed_offset"])

    offset_delete = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    with connect(server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        assert _commit(sock, "g") == ErrorCode.NONE  # offset 42, durable
        deleted, fetched = _pipelined(sock, (OFFSET_DELETE, 0, offset_delete), (OFFSET_FETCH, version, fetch))
        assert deleted["error_code"] == 0 and committed(fetched) == -1
        assert _commit(sock, "g") == ErrorCode.NONE
        deleted, fetched = _pipelined(
            sock, (DELETE_GROUPS, 2, {"groups_names": ["g"]}), (OFFSET_FETCH, version, fetch)
        )
        assert deleted["results"] == [{"group_id": "g", "error_code": 0}] and committed(fetched) == -1


@pytest.mark.server_args("--group-max-size", "2")
def test_a_pending_member_refused_for_max_size_no_longer_holds_the_join_phase(server: KcoordServer) -> None:
    # ClassicGroup.remove forgets pending members too; the join phase is re-checked at once
    def join(sock: socket.socket, member_id: str) -> dict[str, Any]:
        return call(sock, JOIN_GROUP, 5, {**_join_body("g"), "member_id": member_id})

    def send_join(sock: socket.socket, member_id: str) -> None:
        sock.sendall(
            encode_request(JOIN_GROUP, 5, 7, {**_join_body("g"), "member_id": member_id}, client_id="x")
        )

    with connect(server.address) as a, connect(server.address) as b, connect(server.address) as c:
        a_id = join(a, "")["member_id"]
        assert join(a, a_id)["generation_id"] == 1
        sync = {"group_id": "g", "generation_id": 1, "member_id": a_id, "group_instance_id": None,
                "protocol_type": "consumer", "protocol_name": "range", "assignments": []}  # fmt: skip
        assert call(a, SYNC_GROUP, 5, sync)["error_code"] == 0  # Stable, one member of two
        b_id = join(b, "")["member_id"]  # pending (KIP-394)
        c_id = join(c, "")["member_id"]  # pending
        send_join(c, c_id)  # joins: the group rebalances, and waits for a and for pending b
        send_join(a, a_id)
        refused = join(b, b_id)  # two awaiting joins already: over the size
        assert refused["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED and refused["member_id"] == ""
        for sock in (a, c):
            sock.settimeout(5)  # b's pending expiry and the rebalance timeout are 10 s away
            correlation_id, joined = decode_response(JOIN_GROUP, 5, read_frame(sock))
            assert correlation_id == 7 and joined["error_code"] == 0 and joined["generation_id"] == 2


def test_protocol_type_is_checked_while_a_memberless_group_is_not_empty(server: KcoordServer) -> None:
    # ClassicGroup.supportsProtocols waives the type only in state Empty (not "no members").
    # A rebalance held by a pending member (KIP-394) whose only member leaves stays PreparingRebalance
    # with no members until its join timer (the leaver's rebalance timeout, 10 s here) fires.
    with connect(server.address) as a, connect(server.address) as other:
        a_id = call(a, JOIN_GROUP, 5, _join_body("g"))["member_id"]
        assert call(a, JOIN_GROUP, 5, {**_join_body("g"), "member_id": a_id})["generation_id"] == 1
        sync = {"group_id": "g", "generation_id": 1, "member_id": a_id, "group_instance_id": None,
                "protocol_type": "consumer", "protocol_name": "range", "assignments": []}  # fmt: skip
        assert call(a, SYNC_GROUP, 5, sync)["error_code"] == 0
        pending = call(other, JOIN_GROUP, 5, _join_body("g"))  # pending: holds the join phase
        assert pending["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        # the leader rejoins (a rebalance; its join is parked), then leaves from another connection
        a.sendall(encode_request(JOIN_GROUP, 5, 9, {**_join_body("g"), "member_id": a_id}, client_id="a"))
        deadline = time.monotonic() + 5  # another connection: wait until the rejoin was handled
        while _describe(other, "g")["group_state"] != "PreparingRebalance":
            assert time.monotonic() < deadline, "the rejoin never started a rebalance"
        leave = {"group_id": "g", "members": [{"member_id": a_id, "group_instance_id": None}]}
        assert call(other, LEAVE_GROUP, 4, leave)["error_code"] == 0
        a.settimeout(5)
        assert decode_response(JOIN_GROUP, 5, read_frame(a))[1]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        described = _describe(other, "g")
        assert described["group_state"] == "PreparingRebalance" and described["members"] == []
        joined = call(other, JOIN_GROUP, 5, {**_join_body("g"), "protocol_type": "connect"})
        assert joined["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
