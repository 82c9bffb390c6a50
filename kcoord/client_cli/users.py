"""`kcoord users`: SCRAM credentials, like `kafka-configs.sh --entity-type users` (core/.../admin/
ConfigCommand.scala: alterUserScramCredentialConfigs, describeClientQuotaAndUserScramCredentialConfigs),
over AlterUserScramCredentials (51) and DescribeUserScramCredentials (50), v0.

    kcoord users --bootstrap-server HOST:PORT --alter --user alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=x]'
    kcoord users --bootstrap-server HOST:PORT --alter --user alice --delete-config SCRAM-SHA-512
    kcoord users --bootstrap-server HOST:PORT --describe [--user alice ...]

As KIP-554 has it, the password never travels: the tool draws a salt (ScramFormatter.secureRandomBytes)
and sends Hi(password, salt, iterations) (KafkaAdminClient.getSaltedPassword). `--entity-type users
--entity-name NAME` is accepted too. Only SCRAM configs (kcoord has no quotas).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any

from kcoord.client_cli.command import add_connection_arguments, run_command
from kcoord.client_cli.error_text import error_text
from kcoord.client_cli.kafka_client import Cluster, ToolError
from kcoord.client_cli.output import ToolParser
from kcoord.client_cli.sasl_client import MIN_ITERATIONS, SCRAM_HASHES, kafka_nonce, salted_password
from kcoord.protocol.errors import ErrorCode

__all__ = ["Upsertion", "main", "parse_add_config", "upsertion"]

PROG = "kcoord users"
DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS = 50, 51
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # ScramMechanism.type
MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}
DEFAULT_ITERATIONS = 4096  # ConfigCommand.DefaultScramIterations
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)
Upsertion = dict[str, Any]


def parse_add_config(value: str) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: `k=v,k2=[a,b]`: commas inside brackets do not split, the
    brackets are dropped."""
    outside = r"(?=[^\]]*(?:\[|$))"
    result = {}
    for pair in re.split("," + outside, value):
        parts = re.split(r"\s*=\s*" + outside, pair)
        if len(parts) != 2:
            raise ToolError('Invalid entity config: all configs to be added must be in the format "key=val".')
        result[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    return result


def upsertion(user: str, mechanism: str, credential: str) -> Upsertion:
    """One AlterUserScramCredentials upsertion from `iterations=N,password=P` (ConfigCommand's
    iterationsAndPasswordBytes: iterations default 4096, -1 = default, below the minimum refused)."""
    match = _CREDENTIAL.fullmatch(credential)
    if match is None:
        raise ToolError(f"Invalid credential property {mechanism}={credential}")
    iterations_text, password = match.groups()
    iterations = DEFAULT_ITERATIONS if iterations_text in (None, "-1") else int(iterations_text or "0")
    if iterations < MIN_ITERATIONS:
        raise ToolError(
            f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}"
        )
    salt = kafka_nonce().encode()
    return {
        "name": user,
        "mechanism": MECHANISM_CODES[mechanism],
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted_password(mechanism, password.encode(), salt, iterations),
    }


def _alteration(args: argparse.Namespace, user: str) -> tuple[list[dict[str, Any]], list[Upsertion]]:
    added = parse_add_config(args.add_config) if args.add_config else {}
    deleted = [name.strip() for name in (args.delete_config or "").split(",") if name.strip()]
    unknown = [name for name in [*added, *deleted] if name not in SCRAM_HASHES]
    if unknown:
        raise ToolError(
            f"Only SCRAM credential configs can be altered for users (kcoord has no quotas). "
            f"Unexpected config names: {', '.join(unknown)}"
        )
    deletions = [{"name": user, "mechanism": MECHANISM_CODES[name]} for name in deleted]
    return deletions, [upsertion(user, name, value) for name, value in added.items()]


def alter(cluster: Cluster, args: argparse.Namespace) -> int:
    """One request per mechanism: Kafka's controller refuses a second alteration of the same user in one
    request (ScramControlManager.alterCredentials: DUPLICATE_RESOURCE), which would make
    `--add-config 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]'` fail (docs/compat.md)."""
    user = args.users[0]
    deletions, upsertions = _alteration(args, user)
    bodies = [{"deletions": [d], "upsertions": []} for d in deletions]
    bodies += [{"deletions": [], "upsertions": [u]} for u in upsertions]
    for body in bodies:
        response = cluster.bootstrap.request(ALTER_USER_SCRAM_CREDENTIALS, body)
        for result in response["results"]:
            if result["error_code"] != 0:
                message = result["error_message"] or error_text(result["error_code"])
                raise ToolError(f"cannot alter the SCRAM credentials of user '{result['user']}': {message}")
    print(f"Completed updating config for user {user}.")
    return 0


def describe(cluster: Cluster, args: argparse.Namespace) -> int:
    body = {"users": [{"name": u} for u in args.users] if args.users else None}
    response = cluster.bootstrap.request(DESCRIBE_USER_SCRAM_CREDENTIALS, body)
    if response["error_code"] != 0:
        message = response["error_message"] or error_text(response["error_code"])
        raise ToolError(f"cannot describe SCRAM credentials: {message}")
    for result in response["results"]:
        user, code = result["user"], result["error_code"]
        if code == ErrorCode.RESOURCE_NOT_FOUND:  # not listed, as DescribeUserScramCredentialsResult.users
            continue
        if code != 0:
            message = result["error_message"] or error_text(code)
            print(f"Error retrieving SCRAM credential configs for user-principal '{user}': {message}")
            continue
        infos = ", ".join(
            f"{MECHANISM_NAMES.get(i['mechanism'], 'UNKNOWN')}=iterations={i['iterations']}"
            for i in result["credential_infos"]
        )
        print(f"SCRAM credential configs for user-principal '{user}' are {infos}")
    return 0


def _parser() -> ToolParser:
    p = ToolParser(
        prog=PROG, description="Add, delete and describe users' SCRAM credentials (like kafka-configs.sh)."
    )
    add_connection_arguments(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="add or delete SCRAM credentials of one --user")
    action.add_argument("--describe", action="store_true", help="the users' mechanisms and iterations")
    p.add_argument("--user", "--entity-name", dest="users", action="append", default=[], metavar="NAME")
    p.add_argument("--entity-type", choices=("users",), help="accepted for kafka-configs.sh compatibility")
    p.add_argument("--add-config", metavar="'SCRAM-SHA-256=[iterations=N,password=P],...'")
    p.add_argument("--delete-config", metavar="SCRAM-SHA-256[,SCRAM-SHA-512]")
    p.add_argument("--timeout", type=int, default=5000, metavar="MS", help="per request (default 5000)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    if args.alter and len(args.users) != 1:
        p.error("--alter needs exactly one --user (or --entity-name)")
    if args.alter and not (args.add_config or args.delete_config):
        p.error("--alter needs --add-config or --delete-config")
    if args.describe and (args.add_config or args.delete_config):
        p.error("--add-config and --delete-config go with --alter")
    if args.timeout <= 0:
        p.error("--timeout must be positive")
    try:
        if args.alter:
            _alteration(args, args.users[0])  # a malformed --add-config fails before connecting
    except ToolError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    return run_command(PROG, args, alter if args.alter else describe)
