"""`__consumer_offsets` under the authorizer (issue 33 item 5): Metadata lists it only to a client that
may DESCRIBE it (KafkaApis.handleTopicMetadataRequest), Fetch needs READ (handleFetchRequest), as for
any topic."""

from __future__ import annotations

import socket
from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import DESCRIBE, READ, TOPIC, binding, create_acls
from tests.server.wire import call, connect

TOPIC_NAME = "__consumer_offsets"
BOB = "User:bob"


def _metadata(sock: socket.socket, names: list[str] | None) -> list[dict[str, Any]]:
    topics = None if names is None else [{"name": n} for n in names]
    body = {"topics": topics, "allow_auto_topic_creation": False}
    return call(sock, 3, 12, body)["topics"]  # type: ignore[no-any-return]


def _fetch_error(sock: socket.socket) -> int:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1000,
        "topics": [
            {
                "topic": TOPIC_NAME,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}],
            }
        ],
    }
    return int(call(sock, 1, 12, body)["responses"][0]["partitions"][0]["error_code"])


def test_the_internal_topic_is_listed_only_to_who_may_describe_it(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        # created as Kafka creates it, by a Metadata request that may auto-create it (no ACL yet)
        body = {"topics": [{"name": TOPIC_NAME}], "allow_auto_topic_creation": True}
        assert call(sock, 3, 12, body)["topics"][0]["error_code"] == 0
        # an ACL for bob alone closes the topic to ANONYMOUS (allow.everyone.if.no.acl.found stops applying)
        assert create_acls(sock, binding(TOPIC, TOPIC_NAME, READ, principal=BOB)) == [0]
        assert TOPIC_NAME not in [t["name"] for t in _metadata(sock, None)]
        (named,) = _metadata(sock, [TOPIC_NAME])
        assert named["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED and named["partitions"] == []
        assert _fetch_error(sock) == ErrorCode.TOPIC_AUTHORIZATION_FAILED

        assert create_acls(sock, binding(TOPIC, TOPIC_NAME, DESCRIBE)) == [0]
        (listed,) = [t for t in _metadata(sock, None) if t["name"] == TOPIC_NAME]
        assert listed["error_code"] == 0 and listed["is_internal"] is True and len(listed["partitions"]) == 50
        assert _fetch_error(sock) == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # DESCRIBE is not READ

        assert create_acls(sock, binding(TOPIC, TOPIC_NAME, READ)) == [0]
        assert _fetch_error(sock) == ErrorCode.NONE
