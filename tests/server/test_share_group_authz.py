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


ANONYMOUS, DENY, ALL, DELETE, DESCRIBE_CONFIGS = "User:ANONYMOUS", 2, 2, 6, 10


def _anonymous(group: str, operation: int, permission: int = ALLOW) -> dict[str, Any]:
    return {"resource_type": GROUP, "resource_name": group, "resource_pattern_type": LITERAL,
            "principal": ANONYMOUS, "host": "*", "operation": operation,
            "permission_type": permission}  # fmt: skip


# group -> its ACLs for ANONYMOUS, and the authorized operations Kafka 4.3.1 answered for it (probed
# with StandardAuthorizer and allow.everyone.if.no.acl.found=true): none = every operation (3400); READ
# implies DESCRIBE (264); DESCRIBE_CONFIGS + READ (1288); a DENY alone closes the group (30: refused)
_ACL_CASES: dict[str, tuple[list[tuple[int, int]], int]] = {
    "ops-free": ([], 3400),
    "ops-read": ([(READ, ALLOW)], 264),
    "ops-all": ([(ALL, ALLOW)], 3400),
    "ops-cfg": ([(DESCRIBE_CONFIGS, ALLOW), (READ, ALLOW)], 1288),
}


def test_authorized_operations_follow_the_acls_in_every_describe_api(acl_server: KcoordServer) -> None:
    """ShareGroupDescribe, ConsumerGroupDescribe and DescribeGroups (v5) answer
    AuthHelper.authorizedOperations from the ACLs, with the values Kafka 4.3.1 answered for the same
    ACLs; DESCRIBE alone describes a classic group (256) but may not heartbeat a share group."""
    with connect(acl_server.address) as sock:
        assert create_topic(sock, "ops-t", 1)["error_code"] == 0
        creations = [_anonymous(g + suffix, op, perm) for g, (acls, _) in _ACL_CASES.items()
                     for op, perm in acls for suffix in ("", "-cg")]  # fmt: skip
        creations += [_anonymous("ops-describe", DESCRIBE), _anonymous("ops-deny", DELETE, DENY)]
        created = call(sock, CREATE_ACLS, 3, {"creations": creations})["results"]
        assert {r["error_code"] for r in created} == {0}, created
        for group in _ACL_CASES:
            assert _hb(sock, group, ["ops-t"])["error_code"] == 0, group
            body = {"group_id": group + "-cg", "member_id": "c1", "member_epoch": 0, "instance_id": None,
                    "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["ops-t"],
                    "server_assignor": None, "topic_partitions": []}  # fmt: skip
            assert call(sock, 68, 0, body)["error_code"] == 0, group
        expected = {g: ops for g, (_, ops) in _ACL_CASES.items()}
        ids = list(expected)
        shared = call(sock, SHARE_DESCRIBE, 1, {"group_ids": ids, "include_authorized_operations": True})
        assert {g["group_id"]: g["authorized_operations"] for g in shared["groups"]} == expected
        consumer = call(
            sock, 69, 1, {"group_ids": [g + "-cg" for g in ids], "include_authorized_operations": True}
        )
        assert {g["group_id"]: g["authorized_operations"] for g in consumer["groups"]} == {
            g + "-cg": ops for g, ops in expected.items()
        }
        classic = call(sock, 15, 5, {"groups": ["ops-describe", "ops-deny", "ops-read"],
                                     "include_authorized_operations": True})["groups"]  # fmt: skip
        assert sorted((g["group_id"], g["error_code"], g["authorized_operations"]) for g in classic) == [
            ("ops-deny", ErrorCode.GROUP_AUTHORIZATION_FAILED, -(2**31)),
            ("ops-describe", 0, 256),
            ("ops-read", 0, 264),
        ]
