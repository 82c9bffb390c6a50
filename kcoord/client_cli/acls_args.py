"""The command line of `kcoord acls` (kafka-acls.sh's options, AclCommand.AclCommandOptions and its
checkArgs) and the ACLs it names: resource filters x entries, as AclCommand.getResourceFilterToAcls
builds them (including the --producer and --consumer conveniences)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kcoord.client_cli.acl_model import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    AclOperation,
    AclPermissionType,
    Entry,
    PatternType,
    Resource,
    ResourceType,
    operation_from_name,
    pascal_case,
)
from kcoord.client_cli.command import add_connection_arguments
from kcoord.client_cli.output import ToolParser

__all__ = ["Plan", "parse_args", "plan"]

Plan = dict[Resource, list[Entry]]
_PATTERNS = {p.name.lower(): p for p in PatternType if p is not PatternType.UNKNOWN}
_O = AclOperation


def _pattern_type(value: str) -> PatternType:
    try:
        return _PATTERNS[value.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"Unknown resource-pattern-type: {value}") from None


def _parser(prog: str) -> ToolParser:
    p = ToolParser(prog=prog, description="Add, remove and list ACLs (like kafka-acls.sh).")
    add_connection_arguments(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs (asks unless --force)")
    action.add_argument("--list", action="store_true", help="list ACLs (of the given resources, else all)")
    p.add_argument(
        "--topic", action="append", default=[], metavar="TOPIC", help="a topic (repeatable; * = all)"
    )
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="a group (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster")
    p.add_argument("--transactional-id", action="append", default=[], metavar="ID", help="(repeatable)")
    p.add_argument(
        "--resource-pattern-type",
        type=_pattern_type,
        default=PatternType.LITERAL,
        metavar="literal|prefixed|match|any",
        help="the pattern type of the resources (add: literal or prefixed; default literal)",
    )
    p.add_argument(
        "--operation", action="append", default=[], metavar="OP", help="Read, Write, ... (default All)"
    )
    for verb in ("allow", "deny"):
        p.add_argument(f"--{verb}-principal", action="append", default=[], metavar="TYPE:NAME")
        p.add_argument(f"--{verb}-host", action="append", default=[], metavar="HOST", help="default *")
    p.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME", help="--list: only these")
    p.add_argument("--producer", action="store_true", help="the ACLs a producer needs (with --topic)")
    p.add_argument("--idempotent", action="store_true", help="--producer: and IdempotentWrite on the cluster")
    p.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs (--topic and --group)")
    p.add_argument("--force", action="store_true", help="--remove: do not ask")
    p.add_argument("--timeout", type=int, default=5000, metavar="MS", help="per request (default 5000)")
    return p


def _check(p: ToolParser, args: argparse.Namespace) -> None:
    """AclCommandOptions.checkArgs."""
    if args.list and (args.producer or args.consumer or args.allow_principal or args.deny_principal):
        p.error("Option --list is not valid with --producer, --consumer, --allow-*, --deny-*")
    if (args.producer or args.consumer) and (args.operation or args.deny_principal or args.deny_host):
        p.error(
            "Options --producer and --consumer are not valid with --operation, --deny-principal, --deny-host"
        )
    if args.principal and not args.list:
        p.error("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        p.error("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        p.error("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic or not args.group or (not args.producer and (args.cluster or args.transactional_id))
    ):
        p.error(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )
    _check_values(p, args)


def _check_values(p: ToolParser, args: argparse.Namespace) -> None:
    for principal in (*args.allow_principal, *args.deny_principal, *args.principal):
        if ":" not in principal.strip():  # SecurityUtils.parseKafkaPrincipal
            p.error(f"expected a string in format principalType:principalName but got {principal}")
    pattern = args.resource_pattern_type
    if args.add and pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        p.error(f"A '--resource-pattern-type' value of '{pattern.name}' is not valid when adding acls.")
    if args.timeout <= 0:
        p.error("--timeout must be positive")


def resource_filters(args: argparse.Namespace) -> list[Resource]:
    """AclCommand.getResourceFilter: the named resources with --resource-pattern-type (the cluster only
    with literal)."""
    pattern = args.resource_pattern_type
    found = [Resource(ResourceType.TOPIC, t.strip(), pattern) for t in args.topic]
    if pattern is PatternType.LITERAL and (args.cluster or args.idempotent):
        found.append(Resource(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    found += [Resource(ResourceType.GROUP, g.strip(), pattern) for g in args.group]
    found += [Resource(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in args.transactional_id]
    return list(dict.fromkeys(found))


def _entries(args: argparse.Namespace, operations: Sequence[AclOperation]) -> list[Entry]:
    """AclCommand.getAcl: every allowed principal x host x operation, then the denied ones; hosts default
    to * when principals are given."""
    entries = []
    for permission, principals, hosts in (
        (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
        (AclPermissionType.DENY, args.deny_principal, args.deny_host),
    ):
        for principal in dict.fromkeys(pr.strip() for pr in principals):
            for host in dict.fromkeys(h.strip() for h in hosts or [WILDCARD_HOST]):
                entries += [Entry(principal, host, op, permission) for op in operations]
    return entries


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    """--operation, Kafka's default All; an unknown name is UNKNOWN, refused by _validate_operations."""
    operations = [operation_from_name(name.strip()) for name in args.operation or ["All"]]
    return list(dict.fromkeys(operations))


def plan(p: ToolParser, args: argparse.Namespace) -> Plan:
    """Resource (filter) -> the entries the options name (empty: every entry, for --remove)."""
    filters = resource_filters(args)
    result: Plan = {}
    if not args.producer and not args.consumer:
        entries = _entries(args, _operations(args))
        result = {f: entries for f in filters}
    if args.producer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                result[f] = _entries(args, (_O.WRITE, _O.DESCRIBE, _O.CREATE))
            elif f.resource_type is ResourceType.TRANSACTIONAL_ID:
                result[f] = _entries(args, (_O.WRITE, _O.DESCRIBE))
            elif f.resource_type is ResourceType.CLUSTER and args.idempotent:
                result[f] = _entries(args, (_O.IDEMPOTENT_WRITE,))
    if args.consumer:
        for f in filters:
            extra = {ResourceType.TOPIC: (_O.READ, _O.DESCRIBE), ResourceType.GROUP: (_O.READ,)}
            if f.resource_type in extra:
                result[f] = list(dict.fromkeys([*_entries(args, extra[f.resource_type]), *result.get(f, [])]))
    _validate_operations(p, result)
    return result


def _validate_operations(p: ToolParser, result: Plan) -> None:
    """AclCommand.validateOperation."""
    for resource, entries in result.items():
        valid = SUPPORTED_OPERATIONS[resource.resource_type] | {AclOperation.ALL}
        if any(e.operation not in valid for e in entries):
            names = ", ".join(sorted(pascal_case(op.name) for op in valid))
            p.error(f"ResourceType {resource.resource_type.name} only supports operations {names}")


def parse_args(prog: str, argv: Sequence[str] | None) -> tuple[argparse.Namespace, Plan]:
    p = _parser(prog)
    args = p.parse_args(argv)
    _check(p, args)
    if args.list:
        return args, {}
    result = plan(p, args)
    if not result:
        p.error("You must provide at least one resource: --topic <topic> or --cluster or --group <group>")
    if args.add and any(not entries for entries in result.values()):
        p.error("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return args, result
