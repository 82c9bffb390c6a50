"""The `kcoord` command line: `kcoord serve [flags]`, `kcoord health`, `kcoord storage
dump|verify|compact|repair`, `kcoord pipeline offsets|rebalances|lag|compact`, `kcoord groups` and
`kcoord transactions`, `kcoord acls` and `kcoord users` (Kafka-protocol clients, all taking
--command-config), `kcoord dev certs` (a test CA and certificates), `kcoord cluster init` (cluster
mode's PostgreSQL schema; needs kcoord[cluster]).

`python -m kcoord` is the same program; without a subcommand it serves.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

from kcoord.wiring.config import (
    ENV_PREFIX,
    Config,
    HostPort,
    add_serve_arguments,
    config_from_args,
    parse_host_port,
)

__all__ = ["main"]

STORAGE_COMMANDS = ("dump", "verify", "compact", "repair")
CLIENT_COMMANDS = ("groups", "share-groups", "transactions", "acls", "users")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kcoord", description="A standalone Kafka consumer-group coordinator."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the coordinator (flags or KCOORD_* environment variables)")
    add_serve_arguments(serve)
    health = sub.add_parser(
        "health",
        help="exit 0 only if a kcoord listener answers ApiVersions and, where the HTTP endpoint is on, "
        "/readyz says ready (the container HEALTHCHECK)",
    )
    health.add_argument(
        "--bootstrap",
        type=parse_host_port,
        default=None,
        metavar="HOST:PORT",
        help=f"default 127.0.0.1 and the port of {ENV_PREFIX}LISTEN (9092)",
    )
    health.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS", help="default 3")
    health.add_argument(
        "--http",
        type=parse_host_port,
        default=None,
        metavar="HOST:PORT",
        help=f"the HTTP endpoint to ask /readyz; default {ENV_PREFIX}HTTP_LISTEN if set (else not asked)",
    )
    sub.add_parser(
        "storage",
        add_help=False,
        help=f"inspect or repair the data directory: {'|'.join(STORAGE_COMMANDS)} --data-dir DIR",
    )
    sub.add_parser(
        "pipeline",
        add_help=False,
        help="Spark jobs over a data directory or a cluster (needs kcoord[pipeline]): "
        "offsets|rebalances|lag|compact (--data-dir DIR | --cluster DSN) --out DIR [--master URL]",
    )
    sub.add_parser(
        "groups",
        add_help=False,
        help="list, describe, reset or delete consumer groups of any Kafka broker: --bootstrap-server ...",
    )
    sub.add_parser(
        "share-groups",
        add_help=False,
        help="list, describe, reset or delete share groups (like kafka-share-groups.sh): "
        "--bootstrap-server ...",
    )
    sub.add_parser(
        "transactions",
        add_help=False,
        help="list and describe transactions, find and abort hanging ones (like kafka-transactions.sh): "
        "--bootstrap-server ...",
    )
    sub.add_parser(
        "acls",
        add_help=False,
        help="add, remove and list ACLs (like kafka-acls.sh): --bootstrap-server ... --add|--remove|--list",
    )
    sub.add_parser(
        "users",
        add_help=False,
        help="SCRAM credentials (like kafka-configs.sh --entity-type users): --bootstrap-server ... "
        "--alter --user NAME --add-config 'SCRAM-SHA-256=[password=...]' | --describe",
    )
    sub.add_parser(
        "cluster",
        add_help=False,
        help="cluster mode on PostgreSQL (needs kcoord[cluster]): init --cluster DSN [--num-shards 50]",
    )
    sub.add_parser(
        "dev",
        add_help=False,
        help="development helpers: certs --out DIR [--hostname NAME ...] (a test CA and certificates)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "serve")  # `python -m kcoord --listen ...` serves
    if args_list[0] == "storage":
        return _storage(args_list[1:])
    if args_list[0] == "pipeline":
        return _pipeline(args_list[1:])
    if args_list[0] in CLIENT_COMMANDS:
        return _client_command(args_list[0], args_list[1:])
    if args_list[0] == "dev":
        return _dev(args_list[1:])
    if args_list[0] == "cluster":
        return _cluster(args_list[1:])
    args = _parser().parse_args(args_list)
    if args.command == "health":
        status = _health(args.bootstrap, args.timeout)
        return status if status != 0 else _ready(args.http, args.timeout)
    config = config_from_args(args)

    from kcoord.wiring.app import run  # imported late: `kcoord --help` stays fast
    from kcoord.wiring.logs import setup_logging

    setup_logging(config.log_level, config.log_format)
    if config.cluster is not None:
        return _serve_cluster(config)
    return run(config)


def _serve_cluster(config: Config) -> int:
    """`serve --cluster DSN`: loaded by name, so that no path without --cluster imports asyncpg."""
    import importlib

    try:
        module = importlib.import_module("kcoord.cluster.node")
    except ImportError as exc:
        print(f"kcoord serve --cluster: {exc} (pip install 'kcoord[cluster]')", file=sys.stderr)
        return 1
    code: int = module.serve(config)
    return code


def _client_command(name: str, argv: list[str]) -> int:
    """Imported only when run: `kcoord serve` never loads the tools."""
    import importlib

    module = importlib.import_module(f"kcoord.client_cli.{name.replace('-', '_')}")
    return int(module.main(argv))


def _cluster(argv: list[str]) -> int:
    """Loaded by name, only when run: no path without --cluster imports asyncpg (an import-linter
    contract in pyproject.toml holds the static imports; this one is dynamic on purpose)."""
    import importlib

    try:
        module = importlib.import_module("kcoord.cluster.cli")
    except ImportError as exc:
        print(f"kcoord cluster: {exc} (install the extra: pip install 'kcoord[cluster]')", file=sys.stderr)
        return 2
    return int(module.main(argv))


def _dev(argv: list[str]) -> int:
    if argv[:1] != ["certs"]:
        print("usage: kcoord dev certs --out DIR [--hostname NAME ...] [--client-cn CN]", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        from kcoord.client_cli.dev_certs import main as certs_main
    except ImportError as exc:
        print(f"kcoord dev certs: {exc} (pip install cryptography)", file=sys.stderr)
        return 2
    return certs_main(argv[1:])


def _health(address: HostPort | None, timeout_s: float) -> int:
    """One ApiVersions v0 round trip. The listener binds only after recovery, so an answer means ready."""
    from kcoord.protocol.frames import decode_response, encode_request

    if address is None:
        listen = parse_host_port(os.environ.get(ENV_PREFIX + "LISTEN") or "0.0.0.0:9092")
        host = "127.0.0.1" if listen.host in ("0.0.0.0", "::", "") else listen.host
        address = HostPort(host, listen.port)
    correlation_id = os.getpid() & 0x7FFFFFFF
    try:
        with socket.create_connection((address.host, address.port), timeout=timeout_s) as sock:
            sock.sendall(encode_request(18, 0, correlation_id, {}, client_id="kcoord-health"))
            (size,) = struct.unpack(">i", _recv(sock, 4))
            got, body = decode_response(18, 0, _recv(sock, size))
    except Exception as exc:  # refused, timed out, closed, undecodable: all mean "not healthy"
        print(f"kcoord health: {address} not answering: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    if got != correlation_id or body["error_code"] != 0:
        error = body["error_code"]
        print(f"kcoord health: {address} answered error {error} (correlation {got})", file=sys.stderr)
        return 1
    print(f"kcoord health: {address} ok ({len(body['api_keys'])} APIs)")
    return 0


def _ready(address: HostPort | None, timeout_s: float) -> int:
    """/readyz, where the HTTP endpoint is on: not ready while storage refuses writes (a full disk),
    with the server's reason, so an orchestrator sees what a Kafka round trip cannot show."""
    import json
    import urllib.error
    import urllib.request

    if address is None:
        configured = os.environ.get(ENV_PREFIX + "HTTP_LISTEN")
        if not configured:
            return 0
        address = parse_host_port(configured)
    host = "127.0.0.1" if address.host in ("0.0.0.0", "::", "") else address.host
    url = f"http://{host}:{address.port}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            response.read()
        return 0
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read()).get("reason", "")
        except ValueError:
            reason = ""
        print(f"kcoord health: not ready ({exc.code}): {reason or exc.reason}", file=sys.stderr)
    except (OSError, ValueError) as exc:
        print(f"kcoord health: {url} not answering: {exc}", file=sys.stderr)
    return 1


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed before a whole response")
        buf += chunk
    return bytes(buf)


def _storage(argv: list[str]) -> int:
    """The coordinator log (storage/), then for dump and verify the partition logs under topics/."""
    from kcoord.coordinator.persistence import render
    from kcoord.storage.cli import main as storage_main

    status = int(storage_main(argv, render=render) or 0)
    command = argv[0] if argv else ""
    data_dir = _option(argv, "--data-dir")
    if command not in ("dump", "verify") or data_dir is None or status == 2:
        return status
    from kcoord.partition_log.inspect import dump_partitions, verify_partitions

    topics = Path(data_dir) / "topics"
    if command == "dump":
        dump_partitions(topics)
        return status
    problems = verify_partitions(topics)
    print("partition logs ok" if not problems else f"partition logs: {problems} problem(s)")
    return 1 if problems else status


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _pipeline(argv: list[str]) -> int:
    """Imported only here, so `kcoord serve` never loads pipeline/ or pyspark."""
    try:
        from kcoord.pipeline.cli import main as pipeline_main
    except ImportError as exc:
        print(f"kcoord pipeline: {exc} (install the extra: pip install 'kcoord[pipeline]')", file=sys.stderr)
        return 2
    return pipeline_main(argv)
