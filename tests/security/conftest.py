"""Fixtures for the authorization tests: a real `kcoord serve --authorizer standard` whose principal on
PLAINTEXT is User:ANONYMOUS, and ACL helpers that speak CreateAcls on the wire (protocol codec)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kcoord_process import KcoordServer
from tests.server.wire import call

ANONYMOUS = "User:ANONYMOUS"
# Kafka codes (AclOperation, AclPermissionType, ResourceType, PatternType)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, ALL = 3, 4, 5, 6, 7, 8, 2
CLUSTER_ACTION, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 12
DENY, ALLOW = 2, 3
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
CREATE_ACLS, DESCRIBE_ACLS, DELETE_ACLS = 30, 29, 31


def binding(
    resource_type: int, name: str, operation: int, permission: int = ALLOW, principal: str = ANONYMOUS,
    pattern: int = LITERAL, host: str = "*",
) -> dict[str, Any]:  # fmt: skip
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def create_acls(sock: socket.socket, *bindings: dict[str, Any], version: int = 3) -> list[int]:
    results = call(sock, CREATE_ACLS, version, {"creations": list(bindings)})["results"]
    return [int(r["error_code"]) for r in results]


@pytest.fixture
def acl_server(tmp_path: Path) -> Iterator[KcoordServer]:
    """`--authorizer standard --allow-everyone-if-no-acl-found true`: a resource no ACL applies to is
    open, so the tests bootstrap their ACLs over the wire as ANONYMOUS; a resource with an ACL for
    someone else (User:bob) is closed to ANONYMOUS."""
    proc = KcoordServer(
        tmp_path / "data", "--fsync", "never", "--authorizer", "standard",
        "--allow-everyone-if-no-acl-found", "true", "--http-listen", "127.0.0.1:0",
    )  # fmt: skip
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))
