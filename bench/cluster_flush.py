"""`kcoord_flush` alone (issue 35 item 1): what PostgreSQL spends per produced MiB, without nodes or
producers, so layouts and settings can be compared in seconds (bench.cluster's produce phase gives the
figures of record).

    .venv/bin/python -m bench.cluster_flush [--seconds 10] [--writers 3] [--partitions 2]
        [--batches 1] [--batch-kib 384] [--settings default|write-heavy] [--perf perf.data] [--json out.json]

It starts its own PostgreSQL (tests/postgres.py), migrates a database, and runs `--writers` writers
at once, as many nodes' `NodeWriter`s: each holds one connection and calls `kcoord_flush` back to back
with `--batches` batches of `--batch-kib` random bytes (incompressible, as bench.dataplane's records)
for each of its `--partitions` partitions, whose leases it holds. The database's CPU (by process role,
bench/cluster_pg.py) and WAL (records, full-page images, bytes) are reported per MiB stored.
`--perf FILE` records the backends with `perf record -g` while the load runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.cluster_pg import WRITE_HEAVY, apply_settings, pg_cpu, pg_cpu_delta, wal_counters
from bench.dataplane import MIB
from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.node_writer import FLUSH_SQL, FlushCall, Outcome
from kcoord.cluster.partition_rows import Row, StoredBatch
from kcoord.cluster.schema import init_cluster
from kcoord.protocol.record_batch import BatchHeader, write_batch
from tests.postgres import PgServer, start_postgres

TOPIC = "flush-bench"
RECORD_BYTES = 1024 + 70  # a 1 KiB record's value with its framing, about as librdkafka sends it


def make_batch(base: int, size: int, epoch: int) -> StoredBatch:
    """A batch of `size` bytes whose records section is random (what the DB stores is opaque)."""
    count = max(1, size // RECORD_BYTES)
    now = time.time_ns() // 1_000_000
    header = BatchHeader(base, 0, epoch, 2, 0, 0, count - 1, now, now, -1, -1, -1, count)
    data = write_batch(header, os.urandom(max(0, size - 61)))
    return StoredBatch(base, base + count - 1, now, data)


class _Writer:
    """One node's writer: its connection, its partitions' epochs and next offsets."""

    def __init__(self, conn: Any, epochs: dict[int, int]) -> None:
        self.conn = conn
        self.epochs = epochs
        self.ends = dict.fromkeys(epochs, 0)
        self.bytes = 0
        self.size = 0
        self.batches = 1

    async def run(self, deadline: float, size: int, batches: int) -> None:
        self.size, self.batches = size, batches
        while time.monotonic() < deadline:
            call = FlushCall()
            self.take(call)
            row = await self.conn.fetchrow(FLUSH_SQL, *call.args())
            self.settle(call.refusals(row).get(self))

    # node_writer.Writes, as a log hands its queue to the node's writer
    def take(self, call: FlushCall) -> None:
        for partition, epoch in self.epochs.items():
            rows: list[Row] = []
            for _ in range(self.batches):
                batch = make_batch(self.ends[partition], self.size, epoch)
                rows.append((batch, -1, None, None))
                self.ends[partition] = batch.last_offset + 1
                self.bytes += len(batch.data)
            call.add_partition(self, TOPIC, partition, epoch, rows)

    def settle(self, outcome: Outcome) -> None:
        if outcome is not None:
            raise RuntimeError(f"kcoord_flush refused the bench's batches: {outcome!r}")


async def _writers(pg: PgServer, args: argparse.Namespace) -> tuple[Any, list[_Writer]]:
    import asyncpg

    dsn = pg.dsn("kcoord")
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=args.writers + 2)
    async with pool.acquire() as conn:
        await init_cluster(conn, 4)
    writers = []
    for node in range(args.writers):
        leases = PartitionLeases(pool, node + 1, 3_600_000)
        epochs = {}
        for index in range(args.partitions):
            partition = node * args.partitions + index
            epoch = await leases.acquire((TOPIC, partition))
            assert epoch is not None
            epochs[partition] = epoch
        writers.append(_Writer(await pool.acquire(), epochs))
    return pool, writers


async def _closed(dsn: str, pool: Any, writers: list[_Writer]) -> None:
    """Close the writers' connections and wait until their backends are gone."""
    import asyncpg

    pids = [w.conn.get_server_pid() for w in writers]
    for w in writers:
        await pool.release(w.conn)
    await pool.close()
    conn = await asyncpg.connect(dsn)
    try:
        for _ in range(600):  # bounded: a backend exits within milliseconds of its client's close
            if not await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids):
                return
            await asyncio.sleep(0.01)
        raise RuntimeError(f"backends {pids} still there 6 s after their connections closed")
    finally:
        await conn.close()


def _perf(path: str, pg: PgServer, seconds: float) -> subprocess.Popen[bytes]:
    pid = pg.postmaster_pid()
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    pids = ",".join([str(pid), *children.stdout.split()])
    return subprocess.Popen(
        ["perf", "record", "-g", "-o", path, "-p", pids, "--", "sleep", str(max(1.0, seconds - 1))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncpg

    pg = await asyncio.to_thread(start_postgres)
    try:
        await apply_settings(pg, WRITE_HEAVY if args.settings == "write-heavy" else {})
        admin = await asyncpg.connect(pg.dsn())
        try:
            await admin.execute('CREATE DATABASE "kcoord"')
        finally:
            await admin.close()
        pool, writers = await _writers(pg, args)
        size = args.batch_kib * 1024
        # a warm-up second, not counted: the tables' first pages, the plans
        await asyncio.gather(*(w.run(time.monotonic() + 1.0, size, args.batches) for w in writers))
        stored0 = sum(w.bytes for w in writers)
        wal0, cpu0, started = await wal_counters(pg.dsn("kcoord")), pg_cpu(pg), time.monotonic()
        perf = _perf(args.perf, pg, args.seconds) if args.perf else None
        await asyncio.gather(*(w.run(started + args.seconds, size, args.batches) for w in writers))
        elapsed, cpu = time.monotonic() - started, pg_cpu_delta(cpu0, pg_cpu(pg))
        if perf is not None:
            perf.wait(60)
        await _closed(pg.dsn(), pool, writers)  # their WAL counters reach pg_stat_wal when they exit
        wal1 = await wal_counters(pg.dsn("kcoord"))
    finally:
        pg.remove()
    mib = (sum(w.bytes for w in writers) - stored0) / MIB
    return {
        "settings": args.settings,
        "batch_kib": args.batch_kib,
        "batches": args.batches,
        "mib_s": mib / elapsed,
        "db_cpu_ms_per_mib": sum(cpu.values()) * 1000 / mib,
        "db_cpu_ms_per_mib_by_role": {role: s * 1000 / mib for role, s in cpu.items()},
        "wal_mib_per_mib": (wal1["bytes"] - wal0["bytes"]) / MIB / mib,
        "wal_records_per_mib": (wal1["records"] - wal0["records"]) / mib,
        "wal_fpi_per_mib": (wal1["fpi"] - wal0["fpi"]) / mib,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_flush", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--writers", type=int, default=3, help="nodes' writers at once (default 3)")
    parser.add_argument("--partitions", type=int, default=2, help="partitions per writer (default 2)")
    parser.add_argument("--batches", type=int, default=1, help="batches per partition per call (default 1)")
    parser.add_argument("--batch-kib", type=int, default=384, help="bytes of each batch (default 384 KiB)")
    parser.add_argument("--settings", choices=("default", "write-heavy"), default="default")
    parser.add_argument("--perf", default=None, help="perf record -g the server's processes into this file")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    by_role = ", ".join(f"{r} {v:.2f}" for r, v in result["db_cpu_ms_per_mib_by_role"].items() if v)
    print(f"kcoord_flush, {args.writers} writers x {args.partitions} partitions x {args.batches} x "
          f"{args.batch_kib} KiB a call, "
          f"settings {args.settings}: {result['mib_s']:.1f} MiB/s, database "
          f"{result['db_cpu_ms_per_mib']:.2f} ms CPU/MiB ({by_role}); WAL per MiB "
          f"{result['wal_mib_per_mib']:.3f} MiB, {result['wal_records_per_mib']:.0f} records, "
          f"{result['wal_fpi_per_mib']:.1f} full pages")  # fmt: skip
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
