"""Share groups under `--authorizer standard` (User:ANONYMOUS over PLAINTEXT, a resource without ACLs
open), over raw sockets: KafkaApis.handleShareGroupHeartbeat checks READ on the group, then DESCRIBE
on every subscribed topic name (the code alone when refused); handleShareGroupDescribe checks DESCRIBE
on each group and answers the authorized operations from the ACLs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

SHARE_HEARTBEAT, SHARE_DESCRIBE, CREATE_ACLS = 76, 77, 30
READ, DESCRIBE, ALLOW, TOPIC, GROUP, LITERAL = 3, 8, 3, 2, 3, 3
BOB = "User:bob"


@pytest.fixture
def acl_server(tmp_path: Path) -> Iterator[KcoordServer]:
    proc = KcoordServer(
        tmp_path / "data",
        "--fsync",
        "never",
        "--authorizer",
        "standard",
        "--allow-everyone-if-no-acl-found",
        "true",
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()


def _bobs(resource_type: int, name: str, operation: int) -> dict[str, Any]:
    """An ACL for bob alone: the resource is closed to ANONYMOUS."""
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": LITERAL,
            "principal": BOB, "host": "*", "operation": operation, "permission_type": ALLOW}  # fmt: skip


def _hb(sock: Any, group: str, topics: list[str]) -> dict[str, Any]:
    body = {
        "group_id": group,
        "member_id": "m1",
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }
    return call(sock, SHARE_HEARTBEAT, 1, body)


def test_heartbeat_and_describe_are_authorized_as_kafka(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        for name in ("open", "bobs"):
            assert create_topic(sock, name, 1)["error_code"] == 0
        creations = [
            _bobs(GROUP, "closed", READ),
            _bobs(GROUP, "closed", DESCRIBE),
            _bobs(TOPIC, "bobs", DESCRIBE),
        ]
        assert [r["error_code"] for r in call(sock, CREATE_ACLS, 3, {"creations": creations})["results"]] == [
            0,
            0,
            0,
        ]
        refused = _hb(sock, "closed", ["open"])
        assert (refused["error_code"], refused["error_message"]) == (
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
            None,
        )
        hidden = _hb(sock, "g", ["open", "bobs"])
        assert (hidden["error_code"], hidden["error_message"]) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        assert _hb(sock, "g", ["open"])["error_code"] == 0
        body = {"group_ids": ["closed", "g"], "include_authorized_operations": True}
        closed, described = call(sock, SHARE_DESCRIBE, 1, body)["groups"]
        assert (closed["group_id"], closed["error_code"]) == ("closed", ErrorCode.GROUP_AUTHORIZATION_FAILED)
        assert (described["group_id"], described["error_code"], described["group_state"]) == (
            "g",
            0,
            "Stable",
        )
        # no ACL on "g": every operation a group supports is allowed (allow.everyone.if.no.acl.found)
        assert described["authorized_operations"] == 3400
