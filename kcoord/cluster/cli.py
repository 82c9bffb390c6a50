"""`kcoord cluster init --cluster DSN [--num-shards 50] [--cluster-id ID]`: create or upgrade the
cluster schema in PostgreSQL and store the cluster id and shard count once (idempotent).

`kcoord cluster status --cluster DSN [--json]`: the nodes, shard owners and partition leaders with
their epochs (status.py).
Exit codes: 0 done; 1 the database cannot be reached or refuses (one line on stderr, the DSN's
password hidden); 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence

from kcoord.cluster.pg import CONNECT_ERRORS, connect, redact
from kcoord.cluster.schema import (
    SCHEMA_VERSION,
    ClusterMismatch,
    SchemaTooNew,
    init_cluster,
    schema_version,
)
from kcoord.cluster.status import status_lines, status_report
from kcoord.coordinator.runtime.shards import DEFAULT_NUM_SHARDS

__all__ = ["main"]

ENV_CLUSTER = "KCOORD_CLUSTER"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcoord cluster", description="Cluster mode on PostgreSQL.")
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="create or upgrade the schema; store the cluster id once")
    init.add_argument(
        "--cluster",
        metavar="DSN",
        default=os.environ.get(ENV_CLUSTER),
        help=f"postgresql://user[:password]@host[:port]/database (default ${ENV_CLUSTER})",
    )
    init.add_argument(
        "--num-shards",
        type=int,
        default=DEFAULT_NUM_SHARDS,
        metavar="N",
        help="group shards, fixed at the first init (Kafka's offsets.topic.num.partitions; "
        f"default {DEFAULT_NUM_SHARDS})",
    )
    init.add_argument(
        "--cluster-id",
        default=None,
        metavar="ID",
        help="the id to store (default: a new random one); refused if the database holds another",
    )
    status = sub.add_parser("status", help="the nodes, shard owners and partition leaders with their epochs")
    status.add_argument("--cluster", metavar="DSN", default=os.environ.get(ENV_CLUSTER), help="as for init")
    status.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = _parser()
    args = parser.parse_args(list(argv))
    if not args.cluster:
        parser.error(f"--cluster DSN is required (or ${ENV_CLUSTER})")
    if args.command == "status":
        return asyncio.run(_status(args.cluster, args.json))
    if args.num_shards <= 0:
        parser.error(f"--num-shards must be positive, not {args.num_shards}")
    return asyncio.run(_init(args.cluster, args.num_shards, args.cluster_id))


async def _init(dsn: str, num_shards: int, cluster_id: str | None) -> int:
    where = redact(dsn)
    try:
        conn = await connect(dsn)
    except CONNECT_ERRORS as exc:
        return _fail(f"cannot connect to {where}: {_reason(exc)}")
    try:
        info = await init_cluster(conn, num_shards, cluster_id)
    except (ClusterMismatch, SchemaTooNew) as exc:
        return _fail(f"{where}: {exc}")
    except CONNECT_ERRORS as exc:  # the server refused a statement (rights) or the connection broke
        return _fail(f"{where}: {_reason(exc)}")
    finally:
        await conn.close()
    state = "created" if info.created else "already initialized"
    print(
        f"kcoord cluster init: cluster_id={info.cluster_id} num_shards={info.num_shards} "
        f"schema_version={info.schema_version} ({state})"
    )
    return 0


async def _status(dsn: str, as_json: bool) -> int:
    where = redact(dsn)
    try:
        conn = await connect(dsn)
    except CONNECT_ERRORS as exc:
        return _fail(f"cannot connect to {where}: {_reason(exc)}", "status")
    try:
        version = await schema_version(conn)
        if version == 0:
            return _fail(f"{where} has no kcoord schema: run `kcoord cluster init` first", "status")
        if version < SCHEMA_VERSION:  # the tables status reads may not exist yet
            return _fail(
                f"{where} has schema version {version}, this kcoord reads {SCHEMA_VERSION}: "
                "run `kcoord cluster init` to upgrade it",
                "status",
            )
        report = await status_report(conn)
    except CONNECT_ERRORS as exc:
        return _fail(f"{where}: {_reason(exc)}", "status")
    finally:
        await conn.close()
    if as_json:
        print(json.dumps(report, sort_keys=True))
    else:
        for line in status_lines(report):
            print(line)
    return 0


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())  # one line: PostgreSQL's messages may carry newlines
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _fail(message: str, command: str = "init") -> int:
    print(f"kcoord cluster {command}: {message}", file=sys.stderr)
    return 1
