"""`kcoord acls` (the real CLI, in its own process) against a real `kcoord serve --authorizer standard`:
add, list and remove round trip, checked against what confluent-kafka's AdminClient sees; and the
SECURITY_DISABLED answer of a server without an authorizer."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ORDERS = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
PREFIXED = "ResourcePattern(resourceType=TOPIC, name=ord, patternType=PREFIXED)"
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
BOB_DENY = "(principal=User:bob, host=10.0.0.1, operation=ALL, permissionType=DENY)"


def acls(server: KcoordServer, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "acls", "--bootstrap-server", server.bootstrap, *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def acls_ok(server: KcoordServer, *args: str, stdin: str = "") -> str:
    result = acls(server, *args, stdin=stdin)
    assert result.returncode == 0, f"kcoord acls {args}: {result.stderr}"
    return result.stdout


Binding = tuple[str, str, str, str, str, str, str]


def stock_bindings(server: KcoordServer) -> set[Binding]:
    """Every ACL as confluent-kafka's AdminClient describes it (an independent client)."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    found = admin.describe_acls(everything, request_timeout=10).result(timeout=20)
    return {_binding(b) for b in found}


def _binding(b: Any) -> Binding:
    pattern, operation, permission = b.resource_pattern_type.name, b.operation.name, b.permission_type.name
    return (b.restype.name, b.name, pattern, b.principal, b.host, operation, permission)


@pytest.mark.server_args("--authorizer", "standard", "--super-users", "User:ANONYMOUS")
def test_add_list_remove_round_trip(server: KcoordServer) -> None:
    added = acls_ok(
        server, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"
    )
    assert added == f"Adding ACLs for resource `{ORDERS}`: \n \t{ALICE_READ} \n\n"
    acls_ok(
        server,
        "--add",
        "--deny-principal",
        "User:bob",
        "--deny-host",
        "10.0.0.1",
        "--topic",
        "ord",
        "--resource-pattern-type",
        "prefixed",
    )
    assert stock_bindings(server) == {
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "ord", "PREFIXED", "User:bob", "10.0.0.1", "ALL", "DENY"),
    }
    assert acls_ok(server, "--list") == (
        f"Current ACLs for resource `{PREFIXED}`: \n \t{BOB_DENY} \n\n"
        f"Current ACLs for resource `{ORDERS}`: \n \t{ALICE_READ} \n\n"
    )
    # MATCH: the literal topic and every prefixed pattern that covers it
    assert (
        acls_ok(server, "--list", "--topic", "orders", "--resource-pattern-type", "match").count("Current")
        == 2
    )
    assert acls_ok(server, "--list", "--principal", "User:bob").startswith("ACLs for principal `User:bob`\n")

    declined = acls_ok(server, "--remove", "--topic", "orders", stdin="n\n")
    assert "Are you sure you want to delete all ACLs for resource filter" in declined
    assert len(stock_bindings(server)) == 2
    acls_ok(server, "--remove", "--topic", "orders", "--force")
    acls_ok(server, "--remove", "--topic", "ord", "--resource-pattern-type", "prefixed", stdin="y\n")
    assert stock_bindings(server) == set()
    assert acls_ok(server, "--list") == ""


def test_a_server_without_an_authorizer_answers_security_disabled(server: KcoordServer) -> None:
    result = acls(server, "--list")
    assert result.returncode == 1
    assert result.stderr.startswith("kcoord acls: cannot describe ACLs: ")
    assert "Traceback" not in result.stderr
