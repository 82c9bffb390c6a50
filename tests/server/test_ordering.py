"""Responses leave in request order: a parked JoinGroup holds back later responses on its socket."""

from __future__ import annotations

import socket
import struct

from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, decode_response, read_frame, send

JOIN_GROUP, HEARTBEAT, SYNC_GROUP, API_VERSIONS = 11, 12, 14, 18
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
# ConsumerProtocolSubscription v0: topics ["t"], no user data.
SUBSCRIPTION = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)


def _join_body(member_id: str) -> dict[str, object]:
    return {
        "group_id": "ordered",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
    }


def _join_new_member(sock: socket.socket) -> str:
    first = call(sock, JOIN_GROUP, 5, _join_body(""))
    assert first["error_code"] == MEMBER_ID_REQUIRED
    return str(first["member_id"])


def test_parked_join_holds_back_later_responses_on_its_connection(server: KcoordServer) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        member_a = _join_new_member(a)
        joined = call(a, JOIN_GROUP, 5, _join_body(member_a))
        assert joined["error_code"] == 0 and joined["leader"] == member_a
        generation = joined["generation_id"]
        sync = {
            "group_id": "ordered",
            "generation_id": generation,
            "member_id": member_a,
            "group_instance_id": None,
            "assignments": [{"member_id": member_a, "assignment": b""}],
        }
        assert call(a, SYNC_GROUP, 3, sync)["error_code"] == 0

        member_b = _join_new_member(b)
        send(b, JOIN_GROUP, 5, 50, _join_body(member_b))  # parked until member A rejoins
        send(b, API_VERSIONS, 0, 51, {})  # answered at once by the server, but must wait its turn
        b.settimeout(0.5)
        try:
            early = b.recv(1)
        except TimeoutError:
            early = b""
        assert early == b"", "a response overtook the parked JoinGroup"
        b.settimeout(10)

        heartbeat = {
            "group_id": "ordered",
            "generation_id": generation,
            "member_id": member_a,
            "group_instance_id": None,
        }
        assert call(a, HEARTBEAT, 3, heartbeat)["error_code"] == REBALANCE_IN_PROGRESS
        rejoined = call(a, JOIN_GROUP, 5, _join_body(member_a))
        assert rejoined["error_code"] == 0

        correlation_id, body = decode_response(JOIN_GROUP, 5, read_frame(b))
        assert (correlation_id, body["error_code"]) == (50, 0)
        assert body["generation_id"] == generation + 1
        correlation_id, body = decode_response(API_VERSIONS, 0, read_frame(b))
        assert (correlation_id, body["error_code"]) == (51, 0)
