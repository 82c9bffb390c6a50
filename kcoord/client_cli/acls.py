"""`kcoord acls`: add, remove and list ACLs like Kafka's kafka-acls.sh (core/.../admin/AclCommand.scala:
addAcls, removeAcls, listAcls and their messages), over CreateAcls (30), DeleteAcls (31) and
DescribeAcls (29), sent to the bootstrap broker as Kafka's admin client sends them to any broker.

Differences (docs/compat.md): resources and entries print sorted (Kafka prints its hash sets' order);
an error is one line on stderr with exit status 1 (Kafka prints "Error while executing ACL command"
and a stack trace).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from kcoord.client_cli.acl_model import (
    AclOperation,
    AclPermissionType,
    Entry,
    PatternType,
    Resource,
    ResourceType,
)
from kcoord.client_cli.acls_args import Plan, parse_args, resource_filters
from kcoord.client_cli.command import run_command
from kcoord.client_cli.error_text import error_text
from kcoord.client_cli.kafka_client import Cluster, ToolError

__all__ = ["describe_acls", "main"]

PROG = "kcoord acls"
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ANY_RESOURCE = Resource(ResourceType.ANY, None, PatternType.ANY)  # AclBindingFilter.ANY


def _filter_body(resource: Resource, entry: Entry | None) -> dict[str, Any]:
    """An AclBindingFilter on the wire; entry None = AccessControlEntryFilter.ANY."""
    return {
        "resource_type_filter": resource.resource_type,
        "resource_name_filter": resource.name,
        "pattern_type_filter": resource.pattern_type,
        "principal_filter": entry.principal if entry else None,
        "host_filter": entry.host if entry else None,
        "operation": entry.operation if entry else AclOperation.ANY,
        "permission_type": entry.permission_type if entry else AclPermissionType.ANY,
    }


def _check_error(code: int, message: str | None, what: str) -> None:
    if code != 0:
        raise ToolError(f"{what}: {message or error_text(code)}")


def describe_acls(cluster: Cluster, filters: Sequence[Resource]) -> dict[Resource, set[Entry]]:
    """Every binding matching any of `filters` (none: every binding), grouped by resource pattern."""
    found: dict[Resource, set[Entry]] = {}
    for resource in filters or [ANY_RESOURCE]:
        response = cluster.bootstrap.request(DESCRIBE_ACLS, _filter_body(resource, None))
        _check_error(response["error_code"], response["error_message"], "cannot describe ACLs")
        for r in response["resources"]:
            pattern = Resource(
                ResourceType(r["resource_type"]), r["resource_name"], PatternType(r["pattern_type"])
            )
            found.setdefault(pattern, set()).update(
                Entry(
                    a["principal"],
                    a["host"],
                    AclOperation(a["operation"]),
                    AclPermissionType(a["permission_type"]),
                )
                for a in r["acls"]
            )
    return found


def _print_resource(verb: str, resource: Resource, entries: Sequence[Entry], tail: str = "") -> None:
    """AclCommand's block: "<verb> `resource`: " then a tab-indented entry per line, then a blank line."""
    lines = "\n".join(f"\t{e}" for e in entries)
    print(f"{verb} `{resource}`: \n {lines} \n{tail}")


def add_acls(cluster: Cluster, args: argparse.Namespace, acls: Plan) -> int:
    for resource, entries in acls.items():
        _print_resource("Adding ACLs for resource", resource, sorted(entries))
        creations = [
            {
                "resource_type": resource.resource_type,
                "resource_name": resource.name,
                "resource_pattern_type": resource.pattern_type,
                "principal": e.principal,
                "host": e.host,
                "operation": e.operation,
                "permission_type": e.permission_type,
            }
            for e in sorted(entries)
        ]
        response = cluster.bootstrap.request(CREATE_ACLS, {"creations": creations})
        for entry, result in zip(sorted(entries), response["results"], strict=True):
            _check_error(result["error_code"], result["error_message"], f"cannot add {entry} to {resource}")
    return 0


def _confirm(args: argparse.Namespace, message: str) -> bool:
    """AclCommand.confirmAction: --force, or a 'y' on standard input."""
    if args.force:
        return True
    print(message, flush=True)
    return sys.stdin.readline().strip().lower() == "y"


def remove_acls(cluster: Cluster, args: argparse.Namespace, acls: Plan) -> int:
    for resource, entries in acls.items():
        if not entries:
            question = f"Are you sure you want to delete all ACLs for resource filter `{resource}`? (y/n)"
        else:
            listed = "\n".join(f"\t{e}" for e in sorted(entries))
            question = (
                f"Are you sure you want to remove ACLs: \n {listed} \n from resource filter `{resource}`?"
            )
            question += " (y/n)"
        if not _confirm(args, question):
            continue
        filters = [_filter_body(resource, e) for e in sorted(entries)] or [_filter_body(resource, None)]
        response = cluster.bootstrap.request(DELETE_ACLS, {"filters": filters})
        for result in response["filter_results"]:
            _check_error(result["error_code"], result["error_message"], f"cannot remove ACLs of {resource}")
            for match in result["matching_acls"]:
                _check_error(
                    match["error_code"], match["error_message"], f"cannot remove an ACL of {resource}"
                )
    return 0


def list_acls(cluster: Cluster, args: argparse.Namespace, filters: Sequence[Resource]) -> int:
    found = describe_acls(cluster, filters)
    if not args.principal:
        for resource in sorted(found):
            _print_resource("Current ACLs for resource", resource, sorted(found[resource]))
        return 0
    for principal in dict.fromkeys(pr.strip() for pr in args.principal):
        print(f"ACLs for principal `{principal}`")
        for resource in sorted(found):
            entries = sorted(e for e in found[resource] if e.principal == principal)
            if entries:
                _print_resource("Current ACLs for resource", resource, entries)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args, acls = parse_args(PROG, argv)

    def action(cluster: Cluster, args: argparse.Namespace) -> int:
        if args.add:
            return add_acls(cluster, args, acls)
        if args.remove:
            return remove_acls(cluster, args, acls)
        return list_acls(cluster, args, resource_filters(args))

    return run_command(PROG, args, action)
