"""Cluster benchmark (issue 27): three `kcoord serve --cluster` nodes on one PostgreSQL against one
`kcoord serve --fsync always` on the local log, measured in the same run.

    .venv/bin/python -m bench.cluster [--seconds 5] [--rounds 3] [--window 64] [--groups 100]
        [--partitions 6] [--message-bytes 1024] [--lease-ttl-ms 5000]
        [--phases commits,produce,limit,heartbeats,failover] [--failover-mib 0]
        [--pg-settings default|write-heavy] [--json out.json]

It starts its own PostgreSQL (tests/postgres.py: Debian's binaries, defaults, fsync on, in the temp
dir beside the single node's data directory; pg_stat_statements loaded to count the statements),
`kcoord cluster init`, three nodes and the single server, and stops them all. Every round runs the
phases below; each pair's order flips from one round to the next (interleaved) and the report gives
the median of the rounds (every round is in --json):
1. commits: durable OffsetCommit/s (simple groups, one partition each, 100 groups) pipelined over 15
   connections x `--window` in flight: to the single server, and to the cluster's nodes at once, each
   group's commits on connections to its owner (5 per node);
2. produce: librdkafka producer MiB/s (bench.dataplane's produce role, acks=all) over `--partitions`
   partitions: to the single server, and bootstrapping from the three nodes (leaders spread);
3. limit: PostgreSQL's own rate on this machine: batched INSERTs through asyncpg (autocommit,
   synchronous_commit on, 8 connections) of rows as large as the cluster's commit rows (64 a
   statement) and its produced batch rows (4 a statement: random bytes in a column stored EXTERNAL
   as kcoord_partition_batch.batch is), sizes read from the cluster's tables;
4. heartbeats/s of `--groups` groups of 10 members formed in this round, 15 connections x `--window`:
   all on the single server, and with the groups' shards spread over the three nodes (each node
   heartbeats its own groups; a heartbeat writes nothing, so this is the nodes' CPU, not the database);
5. failover: kill -9 of a node owning a group and leading a partition, then SIGTERM to another, each
   timed from the signal to the first successful commit and produce on a survivor
   (bench/cluster_failover.py); the victim restarts before the next phase. With --failover-mib N, a
   third kill -9, of a leader whose partition holds N MiB more (issue 35 item 2: bounded by the
   lease TTL + 1 s, not by the data).
Server CPU (/proc/PID/stat, the three nodes added up) and the database's CPU (the postmaster and its
children, exited ones included; for produce by process role, with the WAL and the statements that
took the time: bench/cluster_pg.py) per request or per MiB are given beside every figure; the fsync
latency of the temp dir's file system too. This one process drives the commit and heartbeat loads
(the producer is its own process): on a small machine they share the cores with the servers and
PostgreSQL, so compare figures only within a run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench import cluster_loads as loads
from bench.cluster_failover import FAILOVER_PARTITIONS, FAILOVER_TOPIC, failovers
from bench.cluster_pg import WRITE_HEAVY, apply_settings
from bench.coordinator import commit_errors, create_topic, git_commit, heartbeat_error, raise_open_files_limit
from bench.dataplane import fsync_latency_ms
from bench.transactions import medians
from tests.cluster.nodes import Node, init_cluster
from tests.kcoord_process import KcoordServer, ServerProcess
from tests.postgres import PgServer, start_postgres

PHASES = ("commits", "produce", "limit", "heartbeats", "failover")
Phase = Callable[[], Awaitable[dict[str, Any]]]


async def in_order(flip: bool, first: Phase, second: Phase) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both, the second first when `flip` (rounds alternate, so drift favours neither)."""
    if flip:
        b = await second()
        return await first(), b
    a = await first()
    return a, await second()


class Bench:
    """The servers of one run: PostgreSQL, three cluster nodes, one server on the local log."""

    def __init__(self, args: argparse.Namespace, root: Path) -> None:
        self.args = args
        self.root = root
        self.pg: PgServer | None = None
        self.nodes: list[Node] = []
        self.single = KcoordServer(root / "single", "--fsync", "always", "--log-level", "INFO",
                                   log_path=root / "single.log")  # fmt: skip
        self.produced_topic: str | None = None

    @property
    def dsn(self) -> str:
        assert self.pg is not None
        return self.pg.dsn("kcoord")

    async def start(self) -> None:
        import asyncpg

        self.pg = await asyncio.to_thread(start_postgres)
        await apply_settings(self.pg, WRITE_HEAVY if self.args.pg_settings == "write-heavy" else {})
        admin = await asyncpg.connect(self.pg.dsn())
        try:
            await admin.execute('CREATE DATABASE "kcoord"')
            await admin.execute('CREATE DATABASE "bench_limit"')
        finally:
            await admin.close()
        await asyncio.to_thread(init_cluster, self.dsn)
        self.nodes = [Node(self.root, i, self.dsn, self.args.lease_ttl_ms) for i in (1, 2, 3)]
        servers: list[ServerProcess] = [self.single, *self.nodes]
        await asyncio.gather(*(asyncio.to_thread(s.start, 60) for s in servers))
        for port in (self.single.port, self.nodes[0].port):
            await create_topic(port, "bench-commits", 1)
        await create_topic(self.nodes[0].port, FAILOVER_TOPIC, FAILOVER_PARTITIONS)

    def stop(self) -> list[int]:
        """Stop every process this run started; their PIDs (for the smoke test to check)."""
        pids = [s.pid for s in [self.single, *self.nodes] if s.proc is not None]
        for server in [self.single, *self.nodes]:
            server.stop()
        if self.pg is not None:
            pids += [pid] if (pid := self.pg.postmaster_pid()) is not None else []
            self.pg.remove()
        return pids

    async def commits_phase(self, flip: bool) -> dict[str, Any]:
        def run(servers: Sequence[Any], pg: PgServer | None) -> Phase:
            async def load() -> dict[str, Any]:
                frames = await asyncio.to_thread(
                    loads.commit_loads, servers, "bench-commits", self.args.window
                )
                return await loads.spread_load(frames, self.args.window, commit_errors, self.args.seconds, pg)

            return load

        single, cluster = await in_order(flip, run([self.single], None), run(self.nodes, self.pg))
        return {"single": single, "cluster": cluster, **_ratio(cluster, single, "requests_per_s")}

    async def produce_phase(self, flip: bool) -> dict[str, Any]:
        def run(servers: Sequence[Any], pg: PgServer | None) -> Phase:
            return lambda: asyncio.to_thread(loads.produce, servers, pg, self.args)

        single, cluster = await in_order(flip, run([self.single], None), run(self.nodes, self.pg))
        self.produced_topic = cluster["topic"]
        return {"single": single, "cluster": cluster, **_ratio(cluster, single, "mib_s")}

    async def limit_phase(self, flip: bool) -> dict[str, Any]:
        assert self.pg is not None
        commit_row, batch_row = await loads.row_sizes(self.dsn, self.produced_topic)
        dsn, seconds, pg = self.pg.dsn("bench_limit"), self.args.seconds, self.pg
        commits, batches = await in_order(
            flip,
            lambda: loads.insert_rate(dsn, commit_row, 64, 8, seconds, pg),
            lambda: loads.insert_rate(dsn, batch_row, 4, 8, seconds, pg),
        )
        return {"commit_rows": commits, "batch_rows": batches}

    async def heartbeats_phase(self, flip: bool, index: int) -> dict[str, Any]:
        def run(servers: Sequence[Any], name: str, pg: PgServer | None) -> Phase:
            async def load() -> dict[str, Any]:
                frames, conns, leaves = await loads.heartbeat_loads(
                    servers, f"hb-{name}-{index}", self.args.groups, 10
                )
                try:
                    return await loads.spread_load(
                        frames, self.args.window, heartbeat_error, self.args.seconds, pg
                    )
                finally:
                    await asyncio.gather(*(leave() for leave in leaves), return_exceptions=True)
                    for conn in conns:
                        conn.close()

            return load

        single, cluster = await in_order(
            flip, run([self.single], "single", None), run(self.nodes, "cluster", self.pg)
        )
        return {"single": single, "cluster": cluster, **_ratio(cluster, single, "requests_per_s")}

    async def failover_phase(self) -> dict[str, Any]:
        return await asyncio.to_thread(failovers, self.nodes, self.args.lease_ttl_ms, self.args.failover_mib)

    async def one_round(self, index: int) -> dict[str, Any]:
        flip, phases, out = index % 2 == 1, self.args.phases, {}
        if "commits" in phases:
            out["commits"] = await self.commits_phase(flip)
        if "produce" in phases:
            out["produce"] = await self.produce_phase(flip)
        if "limit" in phases:
            out["limit"] = await self.limit_phase(flip)
        if "heartbeats" in phases:
            out["heartbeats"] = await self.heartbeats_phase(flip, index)
        if "failover" in phases:
            out["failover"] = await self.failover_phase()
        return out


def _ratio(cluster: dict[str, Any], single: dict[str, Any], key: str) -> dict[str, float]:
    return {"cluster_over_single": cluster[key] / max(single[key], 1e-9)}


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": git_commit(), "argv": sys.argv[1:], "rounds": []}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-cluster-") as tmp:
        results["limits"] = {"fsync_ms": fsync_latency_ms(Path(tmp))}
        run = Bench(args, Path(tmp))
        try:
            await run.start()
            assert run.pg is not None
            results["limits"]["postgresql"] = run.pg.bin_dir.parts[4]  # /usr/lib/postgresql/<major>/bin
            for index in range(args.rounds):
                results["rounds"].append(await run.one_round(index))
                print(f"round {index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            results["pids"] = run.stop()
    results["median"] = medians(results["rounds"])
    return results


def _cpu(row: dict[str, Any], unit: str, server: str, db: str | None = None) -> str:
    text = f"server {row[server]:.1f} {unit}"
    return text + (f" + database {row[db]:.1f} {unit}" if db and row.get(db) else "")


def _load(row: dict[str, Any]) -> str:
    errors = f", errors {row['error_codes']}" if row["errors"] else ""
    cpu = _cpu(row, "us CPU", "server_cpu_us_per_request", "db_cpu_us_per_request")
    return f"{row['requests_per_s']:,.0f}/s p99 {row['p99_ms']:.1f} ms ({cpu} each{errors})"


def _seconds(value: float | None) -> str:
    return "not within the timeout" if value is None or value != value else f"{value:.2f} s"


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    m, limits = results["median"], results["limits"]
    print(f"commit {results['commit']}: median of {args.rounds} interleaved round(s) of {args.seconds:g} s "
          f"loads; three nodes (--lease-ttl-ms {args.lease_ttl_ms}) on PostgreSQL {limits['postgresql']} "
          f"against one node on the local log (--fsync always)")  # fmt: skip
    print(f"    python -m bench.cluster {' '.join(results['argv'])}")
    print(f"limits: fsync {limits['fsync_ms']:.2f} ms")
    if "limit" in m:
        c, b = m["limit"]["commit_rows"], m["limit"]["batch_rows"]
        print(f"PostgreSQL's own batched INSERTs (asyncpg, 8 connections, synchronous_commit on): "
              f"{c['rows_per_s']:,.0f} rows/s of {c['row_bytes']:.0f} bytes ({c['rows_per_statement']:.0f} a "
              f"statement, database {c['db_cpu_us_per_row']:.1f} us CPU/row); {b['mib_s']:.1f} MiB/s of "
              f"{b['row_bytes']:,.0f}-byte random rows stored EXTERNAL ({b['rows_per_statement']:.0f} a "
              f"statement, database {b['db_cpu_ms_per_mib']:.1f} ms CPU/MiB)")  # fmt: skip
    if "commits" in m:
        row = m["commits"]
        print(f"durable commits, {loads.CONNECTIONS} connections x {args.window} in flight: "
              f"one node {_load(row['single'])}")  # fmt: skip
        print(f"    three nodes {_load(row['cluster'])}: {row['cluster_over_single']:.2f}x")
    if "produce" in m:
        row = m["produce"]
        one, three = row["single"], row["cluster"]
        print(f"produce (librdkafka, acks=all, {args.message_bytes}-byte records, {args.partitions} "
              f"partitions): "
              f"one node {one['mib_s']:.1f} MiB/s ({_cpu(one, 'ms CPU/MiB', 'server_cpu_ms_per_mib')}), "
              f"three nodes {three['mib_s']:.1f} MiB/s "
              f"({_cpu(three, 'ms CPU/MiB', 'server_cpu_ms_per_mib', 'db_cpu_ms_per_mib')}): "
              f"{row['cluster_over_single']:.2f}x")  # fmt: skip
        roles = three.get("db_cpu_ms_per_mib_by_role", {})
        if roles:
            by_role = ", ".join(f"{r} {v:.2f}" for r, v in roles.items() if abs(v) >= 0.005)
            idle = three["db_idle_cpu_ms_per_mib"]
            print(f"    the database's ms CPU/MiB by process: {by_role} (of which {idle:.2f} its rate "
                  f"while idle); WAL {three['wal_mib_per_mib']:.2f} MiB and "
                  f"{three['wal_fpi_per_mib']:.1f} full-page images per MiB")  # fmt: skip
            for row in three.get("statements", []):
                print(f"    {row['calls']:8.0f} calls {row['ms_per_mib']:6.2f} ms/MiB  {row['query']!r}")
    if "heartbeats" in m:
        row = m["heartbeats"]
        print(f"heartbeats, {args.groups} groups x 10 members: one node {_load(row['single'])}")
        print(f"    shards over three nodes {_load(row['cluster'])}: {row['cluster_over_single']:.2f}x")
    for kind, name in (("kill_9", "kill -9"), ("sigterm", "SIGTERM"), ("kill_9_filled", "kill -9")):
        if kind in m.get("failover", {}):
            row = m["failover"][kind]
            held = f" of a leader holding {row['partition_mib']:.0f} MiB more" if row["partition_mib"] else ""
            print(f"failover, {name}{held} to the first commit on a survivor {_seconds(row['commit_s'])}, "
                  f"to the first produce {_seconds(row['produce_s'])} (the process exited after "
                  f"{row['exit_s']:.2f} s)")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each timed load (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--window", type=int, default=64, help="requests in flight per connection")
    parser.add_argument("--groups", type=int, default=100, help="heartbeating groups of 10 (default 100)")
    parser.add_argument("--partitions", type=int, default=6, help="produce phase's partitions (default 6)")
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--lease-ttl-ms", type=int, default=5000, help="the nodes' lease TTL (default 5000)")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--failover-mib", type=int, default=0,
                        help="failover: also kill -9 a leader holding this many MiB more")  # fmt: skip
    parser.add_argument(
        "--pg-settings",
        choices=("default", "write-heavy"),
        default="default",
        help="PostgreSQL's defaults, or bench/cluster_pg.py WRITE_HEAVY (tried: no gain)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.phases = set(args.phases.split(","))
    raise_open_files_limit()
    import uvloop

    results = uvloop.run(bench(args))
    report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
