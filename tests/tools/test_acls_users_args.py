"""`kcoord acls` and `kcoord users` without a server: the ACLs the options name (AclCommand's
getResourceFilterToAcls and checkArgs), Kafka's printed forms, ConfigCommand's --add-config syntax and
the salted password KIP-554 sends."""

from __future__ import annotations

import base64
import hmac

import pytest

from kcoord.client_cli.acl_model import (
    AclOperation,
    AclPermissionType,
    Entry,
    PatternType,
    Resource,
    ResourceType,
    operation_from_name,
)
from kcoord.client_cli.acls_args import parse_args
from kcoord.client_cli.kafka_client import ToolError
from kcoord.client_cli.users import main as users_main
from kcoord.client_cli.users import parse_add_config, upsertion

BOOT = ["--bootstrap-server", "127.0.0.1:9"]
ALICE = "User:alice"


def acls(*argv: str) -> dict[Resource, list[Entry]]:
    return parse_args("kcoord acls", [*BOOT, *argv])[1]


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parse_args("kcoord acls", [*BOOT, *argv])
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_add_names_every_principal_host_and_operation_per_resource() -> None:
    plan = acls(
        "--add",
        "--allow-principal",
        ALICE,
        "--allow-host",
        "10.0.0.1",
        "--deny-principal",
        "User:mallory",
        "--operation",
        "Read",
        "--operation",
        "DESCRIBE",
        "--topic",
        "orders",
        "--group",
        "g1",
    )
    topic = Resource(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    group = Resource(ResourceType.GROUP, "g1", PatternType.LITERAL)
    assert list(plan) == [topic, group]
    assert sorted(plan[topic]) == sorted(
        [
            Entry(ALICE, "10.0.0.1", AclOperation.READ, AclPermissionType.ALLOW),
            Entry(ALICE, "10.0.0.1", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            Entry("User:mallory", "*", AclOperation.READ, AclPermissionType.DENY),
            Entry("User:mallory", "*", AclOperation.DESCRIBE, AclPermissionType.DENY),
        ]
    )
    assert plan[group] == plan[topic]


def test_operation_defaults_to_all_and_names_match_kafkas_forms() -> None:
    plan = acls("--add", "--allow-principal", ALICE, "--cluster")
    cluster = Resource(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
    assert plan == {cluster: [Entry(ALICE, "*", AclOperation.ALL, AclPermissionType.ALLOW)]}
    assert operation_from_name("DescribeConfigs") is AclOperation.DESCRIBE_CONFIGS
    assert operation_from_name("IDEMPOTENTWRITE") is AclOperation.IDEMPOTENT_WRITE
    assert operation_from_name("Fly") is AclOperation.UNKNOWN


def test_producer_and_consumer_conveniences() -> None:
    plan = acls(
        "--add",
        "--allow-principal",
        ALICE,
        "--producer",
        "--idempotent",
        "--topic",
        "t",
        "--transactional-id",
        "tx",
    )
    ops = {r.resource_type: sorted(e.operation.name for e in entries) for r, entries in plan.items()}
    assert ops == {
        ResourceType.TOPIC: ["CREATE", "DESCRIBE", "WRITE"],
        ResourceType.TRANSACTIONAL_ID: ["DESCRIBE", "WRITE"],
        ResourceType.CLUSTER: ["IDEMPOTENT_WRITE"],
    }
    plan = acls("--add", "--allow-principal", ALICE, "--consumer", "--topic", "t", "--group", "g")
    ops = {r.resource_type: sorted(e.operation.name for e in entries) for r, entries in plan.items()}
    assert ops == {ResourceType.TOPIC: ["DESCRIBE", "READ"], ResourceType.GROUP: ["READ"]}


def test_remove_without_principals_means_every_entry_of_the_filter() -> None:
    plan = acls("--remove", "--topic", "pre", "--resource-pattern-type", "PREFIXED")
    assert plan == {Resource(ResourceType.TOPIC, "pre", PatternType.PREFIXED): []}


def test_usage_errors_are_kafkas(capsys: pytest.CaptureFixture[str]) -> None:
    assert "is not valid when adding acls" in usage_error(
        capsys, "--add", "--allow-principal", ALICE, "--topic", "t", "--resource-pattern-type", "match"
    )
    assert "You must specify one of: --allow-principal, --deny-principal" in usage_error(
        capsys, "--add", "--topic", "t"
    )
    assert "You must provide at least one resource" in usage_error(
        capsys, "--add", "--allow-principal", ALICE
    )
    assert "ResourceType GROUP only supports operations" in usage_error(
        capsys, "--add", "--allow-principal", ALICE, "--group", "g", "--operation", "Write"
    )
    assert "expected a string in format principalType:principalName but got alice" in usage_error(
        capsys, "--add", "--allow-principal", "alice", "--topic", "t"
    )
    assert "Unknown resource-pattern-type: glob" in usage_error(
        capsys, "--list", "--resource-pattern-type", "glob"
    )
    assert "With --producer you must specify a --topic" in usage_error(
        capsys, "--add", "--allow-principal", ALICE, "--producer", "--group", "g"
    )
    assert "only available if --list" in usage_error(capsys, "--add", "--principal", ALICE, "--topic", "t")


def test_printed_forms_are_kafkas_to_string() -> None:
    assert str(Resource(ResourceType.TOPIC, "orders", PatternType.LITERAL)) == (
        "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    )
    assert str(Resource(ResourceType.ANY, None, PatternType.ANY)) == (
        "ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY)"
    )
    assert str(Entry(ALICE, "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY)) == (
        "(principal=User:alice, host=*, operation=DESCRIBE_CONFIGS, permissionType=DENY)"
    )


# -- users -------------------------------------------------------------------------------------------------


def test_add_config_splits_outside_brackets_only() -> None:
    assert parse_add_config("SCRAM-SHA-256=[iterations=8192,password=a,b=c],SCRAM-SHA-512=[password=x]") == {
        "SCRAM-SHA-256": "iterations=8192,password=a,b=c",
        "SCRAM-SHA-512": "password=x",
    }
    with pytest.raises(ToolError, match="must be in the format"):
        parse_add_config("SCRAM-SHA-256")


def test_upsertion_sends_the_salted_password_a_scram_server_can_verify() -> None:
    up = upsertion("alice", "SCRAM-SHA-256", "iterations=8192,password=alice-secret")
    assert (up["name"], up["mechanism"], up["iterations"]) == ("alice", 1, 8192)
    assert b"alice-secret" not in up["salted_password"]
    # Hi() of RFC 5802 by its definition: U1 = HMAC(p, salt + INT(1)), Ui = HMAC(p, Ui-1), Hi = U1 ^ ... ^ Ui
    u = hmac.new(b"alice-secret", up["salt"] + b"\0\0\0\1", "sha256").digest()
    result = int.from_bytes(u)
    for _ in range(8191):
        u = hmac.new(b"alice-secret", u, "sha256").digest()
        result ^= int.from_bytes(u)
    assert up["salted_password"] == result.to_bytes(32)
    assert upsertion("bob", "SCRAM-SHA-512", "password=x")["iterations"] == 4096
    assert upsertion("bob", "SCRAM-SHA-512", "iterations=-1,password=x")["iterations"] == 4096
    assert base64.b64encode(up["salt"]) != base64.b64encode(
        upsertion("a", "SCRAM-SHA-256", "password=p")["salt"]
    )
    with pytest.raises(
        ToolError, match="Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"
    ):
        upsertion("alice", "SCRAM-SHA-256", "iterations=1000,password=x")
    with pytest.raises(ToolError, match="Invalid credential property"):
        upsertion("alice", "SCRAM-SHA-256", "pass=x")


def test_users_refuses_non_scram_configs_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    status = users_main([*BOOT, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024"])
    assert status == 1
    assert "Unexpected config names: producer_byte_rate" in capsys.readouterr().err
