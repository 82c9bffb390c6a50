"""What every kcoord client command shares: --bootstrap-server and --command-config, opening the cluster
with the file's security settings, and the one-line error with exit status 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from kcoord.client_cli.client_config import ConfigError, load_command_config
from kcoord.client_cli.kafka_client import Cluster, ToolError, parse_bootstrap

__all__ = ["add_connection_arguments", "open_cluster", "run_command"]

COMMAND_CONFIG_HELP = (
    "Kafka client properties: security.protocol, ssl.truststore.location, ssl.keystore.location, "
    "ssl.key.password, ssl.endpoint.identification.algorithm, sasl.mechanism, sasl.jaas.config, "
    "sasl.oauthbearer.token.endpoint.url=file:... (docs/security.md: Security from the client side)"
)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--command-config", metavar="FILE", help=COMMAND_CONFIG_HELP)


def open_cluster(args: argparse.Namespace) -> Cluster:
    """A Cluster over args.bootstrap_server with args.command_config's TLS and SASL (ToolError when
    the file or the servers are wrong); per-request timeout args.timeout ms."""
    bootstrap = parse_bootstrap(args.bootstrap_server)
    try:
        security = load_command_config(args.command_config)
    except ConfigError as exc:
        raise ToolError(f"--command-config {args.command_config}: {exc}") from None
    return Cluster(bootstrap, args.timeout / 1000, security)


def run_command(
    prog: str, args: argparse.Namespace, action: Callable[[Cluster, argparse.Namespace], int]
) -> int:
    """action(cluster, args) with the cluster closed afterwards; a ToolError is one line on stderr and
    exit status 1."""
    try:
        with open_cluster(args) as cluster:
            return action(cluster, args)
    except ToolError as exc:
        sys.stdout.flush()
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
