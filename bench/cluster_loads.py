"""The loads of bench.cluster (issue 27): durable commits, librdkafka produce, heartbeats, each driven
at one server or spread over a cluster's nodes by the group's owner, and PostgreSQL's own insert rate.

A load over several nodes runs bench.coordinator's pipelined load against each node at once (the
frames of the groups it owns on its own connections) and adds the answers up; server CPU is the sum
of the nodes' CPU (/proc/PID/stat) and the database's CPU (the postmaster and its children) is given
beside it, per request.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.cluster_pg import pg_cpu, pg_cpu_delta, statements, statements_delta, wal_counters
from bench.coordinator import (
    COMMIT_V,
    Conn,
    connect,
    encode,
    form_group,
    heartbeat_frames,
    leave_group,
    run_load,
)
from bench.dataplane import MIB, run_role
from bench.dataplane import create_topic as create_topic_with_librdkafka
from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.nodes import commit, rpc, until
from tests.kcoord_process import ServerProcess
from tests.postgres import PgServer

CONNECTIONS = 15  # in total: 15 to one server, 5 to each of three nodes
COMMIT_GROUPS = 100
FIND_COORDINATOR_V = 3


# -- where things live ----------------------------------------------------------------------------------


def pg_cpu_seconds(pg: PgServer | None) -> float:
    """CPU seconds of the postmaster and its children so far, exited ones included (0 without a
    database; by role: bench/cluster_pg.py)."""
    return sum(pg_cpu(pg).values())


def owners(servers: Sequence[Any], groups: Sequence[str]) -> dict[str, Any]:
    """group -> the server that coordinates it, once every server names the preferred owner
    (rendezvous over the node ids, as the nodes place shards); one server owns everything."""
    if len(servers) == 1:
        return {g: servers[0] for g in groups}
    by_id = {s.node_id: s for s in servers}
    wanted = {g: by_id[preferred_owner(shard_of(g), by_id)] for g in groups}
    shards = {shard_of(g): (g, s) for g, s in wanted.items()}  # one group per shard is enough to ask

    def settled() -> bool | None:
        for group, owner in shards.values():
            for asker in servers:
                answer = rpc(asker.address, 10, FIND_COORDINATOR_V, {"key": group, "key_type": 0})
                if answer["error_code"] or answer["node_id"] != owner.node_id:
                    return None
        return True

    until(settled, 60, "every node names each group's preferred owner", step=0.1)
    return wanted


def by_server(placed: dict[str, Any]) -> dict[Any, list[str]]:
    out: dict[Any, list[str]] = collections.defaultdict(list)
    for group, server in placed.items():
        out[server].append(group)
    return out


def spread(frames: list[bytes], connections: int) -> list[list[bytes]]:
    return [frames[i::connections] for i in range(connections) if frames[i::connections]]


# -- one load over one server or several ------------------------------------------------------------------


async def spread_load(
    loads: dict[ServerProcess, list[list[bytes]]],
    window: int,
    error_of: Callable[[bytes], int],
    seconds: float,
    pg: PgServer | None,
) -> dict[str, Any]:
    """The pipelined load against every server at once: requests/s added up, CPU per request."""
    db0 = pg_cpu_seconds(pg)
    results = await asyncio.gather(
        *(
            run_load(server, frames, window, error_of, min(1.0, seconds), seconds)
            for server, frames in loads.items()
        )
    )
    db = pg_cpu_seconds(pg) - db0  # over warm-up and load: an upper bound per request
    rate = sum(r.requests_per_s for r in results)
    cpu_per_s = sum(r.server_cpu_pct / 100 for r in results)
    errors: collections.Counter[int] = collections.Counter()
    for r in results:
        errors.update(r.errors)
    return {
        "requests_per_s": rate,
        "p50_ms": statistics.median(r.p50_ms for r in results),
        "p99_ms": max(r.p99_ms for r in results),
        "server_cpu_us_per_request": cpu_per_s * 1e6 / max(rate, 1e-9),
        "db_cpu_us_per_request": db * 1e6 / max(rate * (seconds + min(1.0, seconds)), 1e-9),
        "errors": sum(errors.values()),
        "error_codes": str(dict(errors)),
    }


# -- durable commits ---------------------------------------------------------------------------------------


def commit_body(group: str, topic: str, offset: int) -> dict[str, Any]:
    return {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_metadata": "bench"}]}],
    }  # fmt: skip


def _committed(address: tuple[str, int], group: str, topic: str) -> bool | None:
    return commit(address, group, topic, 0) == 0 or None


def commit_loads(servers: Sequence[Any], topic: str, window: int) -> dict[Any, list[list[bytes]]]:
    """OffsetCommit frames (simple groups, one partition each) for `COMMIT_GROUPS` groups, each on a
    connection to its owner; every owner answered one commit first (it has seen the topic)."""
    groups = [f"commit-{i}" for i in range(COMMIT_GROUPS)]
    placed = by_server(owners(servers, groups))
    per_server = max(1, CONNECTIONS // len(servers))
    loads = {}
    for server, mine in placed.items():
        seen = functools.partial(_committed, server.address, mine[0], topic)
        until(seen, 30, f"{server.name} has seen {topic}")
        count = max(len(mine), per_server * window)
        frames = [encode(8, COMMIT_V, commit_body(mine[i % len(mine)], topic, i)) for i in range(count)]
        loads[server] = spread(frames, per_server)
    return loads


# -- heartbeats --------------------------------------------------------------------------------------------


async def heartbeat_loads(
    servers: Sequence[Any], prefix: str, groups: int, per_group: int
) -> tuple[dict[Any, list[list[bytes]]], list[Conn], list[Callable[[], Any]]]:
    """`groups` groups of `per_group` members formed on their owners; their Heartbeat frames per owner
    over its share of the connections, the members' connections (to close) and the leaves."""
    placed = by_server(owners(servers, [f"{prefix}-{g}" for g in range(groups)]))
    per_server = max(1, CONNECTIONS // len(servers))
    loads: dict[Any, list[list[bytes]]] = {}
    conns: list[Conn] = []
    leaves: list[Callable[[], Any]] = []
    for server, mine in placed.items():
        member_conns = await connect(server.port, len(mine) * per_group)
        conns += member_conns
        formed = await asyncio.gather(*(
            form_group(member_conns[i * per_group : (i + 1) * per_group], group, "bench-heartbeats", 1.0, 60)
            for i, group in enumerate(mine)
        ))  # fmt: skip
        loads[server] = await heartbeat_frames(formed, per_server)
        for index, (formation, members, tasks) in enumerate(formed):
            conn = member_conns[index * per_group]
            leaves.append(functools.partial(leave_group, conn, formation.group, members, tasks))
    return loads, conns, leaves


# -- produce (bench.dataplane's librdkafka producer, acks=all) ---------------------------------------------


def metadata_leaders(server: Any, topic: str) -> dict[int, int]:
    """partition -> leader (-1: none now) in `server`'s Metadata v4; empty if it cannot be asked."""
    try:
        answer = rpc(server.address, 3, 4, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    except OSError:
        return {}
    return {int(p["partition_index"]): int(p["leader_id"]) for p in answer["topics"][0]["partitions"]}


def leaders(server: Any, topic: str, partitions: int) -> dict[int, int] | None:
    """partition -> leader in `server`'s Metadata; None until every partition has one."""
    found = metadata_leaders(server, topic)
    return found if len(found) == partitions and min(found.values()) >= 0 else None


def agreed_leaders(servers: Sequence[Any], topic: str, partitions: int) -> dict[int, int]:
    """The leaders once every server names the same live leader for every partition."""
    ids = {getattr(s, "node_id", 0) for s in servers}

    def agreed() -> dict[int, int] | None:
        seen = [leaders(s, topic, partitions) for s in servers]
        first = seen[0]
        if first is None or any(s != first for s in seen) or not set(first.values()) <= ids:
            return None
        return first

    return until(agreed, 60, f"every node names the same live leaders of {topic}", step=0.1)


def produce(servers: Sequence[Any], pg: PgServer | None, args: Any) -> dict[str, Any]:
    """One producer process for `args.seconds` bootstrapping from every server; MiB/s, CPU per MiB."""
    topic = f"bench-produce-{time.monotonic_ns()}"
    bootstrap = ",".join(s.bootstrap for s in servers)
    create_topic_with_librdkafka(bootstrap, topic, args.partitions)
    if len(servers) > 1:
        agreed_leaders(servers, topic, args.partitions)
    opts = {"bootstrap": bootstrap, "topic": topic, "partitions": args.partitions,
            "message_bytes": args.message_bytes, "seconds": args.seconds}  # fmt: skip
    idle = idle_db_cpu(pg) if pg is not None else 0.0
    before = asyncio.run(_pg_counters(pg)) if pg is not None else None
    cpu0, db0 = sum(s.cpu_seconds() for s in servers), pg_cpu(pg)
    started = time.monotonic()
    produced = run_role("produce", opts)
    elapsed = time.monotonic() - started
    cpu, db = sum(s.cpu_seconds() for s in servers) - cpu0, pg_cpu_delta(db0, pg_cpu(pg))
    mib = max(produced["bytes"] / MIB, 1e-9)
    out: dict[str, Any] = {
        "topic": topic,
        "mib_s": mib / produced["seconds"],
        "server_cpu_ms_per_mib": cpu * 1000 / mib,
        "db_cpu_ms_per_mib": sum(db.values()) * 1000 / mib,
    }
    if pg is not None and before is not None:
        after = asyncio.run(_pg_counters(pg))
        out["db_cpu_ms_per_mib_by_role"] = {role: s * 1000 / mib for role, s in db.items()}
        out["db_idle_cpu_ms_per_mib"] = idle * elapsed * 1000 / mib
        out["wal_mib_per_mib"] = (after[0]["bytes"] - before[0]["bytes"]) / MIB / mib
        out["wal_fpi_per_mib"] = (after[0]["fpi"] - before[0]["fpi"]) / mib
        out["statements"] = [
            {"query": q, "calls": c, "ms_per_mib": ms / mib}
            for q, c, ms in statements_delta(before[1], after[1])
        ]
    return out


def idle_db_cpu(pg: PgServer, seconds: float = 2.0) -> float:
    """The database's CPU seconds per second while the nodes only keep their leases and polls: the
    fixed cost that a produce load's figure per MiB includes for its whole span."""
    cpu0 = pg_cpu(pg)
    time.sleep(seconds)  # a rate over a window: nothing to await
    return sum(pg_cpu_delta(cpu0, pg_cpu(pg)).values()) / seconds


async def _pg_counters(pg: PgServer) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    return await wal_counters(pg.dsn()), await statements(pg.dsn("kcoord"))


# -- the limit: PostgreSQL's own batched INSERTs through asyncpg -------------------------------------------


async def insert_rate(dsn: str, row_bytes: int, batch: int, connections: int, seconds: float,
                      pg: PgServer) -> dict[str, Any]:  # fmt: skip
    """Rows of `row_bytes` inserted `batch` per statement (autocommit, synchronous_commit on: one
    durable commit each) from `connections` at once for `seconds`; rows/s, MiB/s, database CPU.

    The rows are what a produce load stores: random bytes (bench.dataplane's records are
    `os.urandom`, nothing a codec shrinks) in a column stored as kcoord_partition_batch.batch is
    (`STORAGE EXTERNAL`, migration 4: out of line in ~2 KB TOAST chunks, no pglz). Rows of zeros in a
    default column were pglz-compressed to almost nothing and never left the heap, an unfair ceiling."""
    import asyncpg

    pool = await asyncpg.create_pool(dsn, min_size=connections, max_size=connections)
    try:
        await pool.execute("DROP TABLE IF EXISTS bench_limit")
        await pool.execute("CREATE TABLE bench_limit (k bigint PRIMARY KEY, v bytea NOT NULL)")
        await pool.execute("ALTER TABLE bench_limit ALTER COLUMN v SET STORAGE EXTERNAL")
        values = [os.urandom(row_bytes) for _ in range(max(batch, 16))]  # distinct: no row repeats another
        keys, done = iter(range(1 << 62)), [0]
        deadline = time.monotonic() + seconds

        async def writer() -> None:
            async with pool.acquire() as conn:
                await conn.execute("SET synchronous_commit = on")
                while time.monotonic() < deadline:
                    ks = [next(keys) for _ in range(batch)]
                    await conn.execute(
                        "INSERT INTO bench_limit SELECT * FROM unnest($1::bigint[], $2::bytea[])",
                        ks, [values[k % len(values)] for k in ks],
                    )  # fmt: skip
                    done[0] += batch

        db0, started = pg_cpu_seconds(pg), time.monotonic()
        await asyncio.gather(*(writer() for _ in range(connections)))
        elapsed, db = time.monotonic() - started, pg_cpu_seconds(pg) - db0
        await pool.execute("DROP TABLE bench_limit")
    finally:
        await pool.close()
    mib = max(done[0] * row_bytes / MIB, 1e-9)
    return {
        "row_bytes": row_bytes,
        "rows_per_statement": batch,
        "rows_per_s": done[0] / elapsed,
        "mib_s": mib / elapsed,
        "db_cpu_us_per_row": db * 1e6 / max(done[0], 1),
        "db_cpu_ms_per_mib": db * 1000 / mib,
    }


async def row_sizes(dsn: str, topic: str | None) -> tuple[int, int]:
    """The mean size of a commit row (key + value in kcoord_record) and of a produced batch row
    (kcoord_partition_batch.batch, of `topic`) the cluster wrote: the limit inserts rows as large."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        commit_row = await conn.fetchval(
            "SELECT avg(octet_length(key) + octet_length(value)) FROM kcoord_record"
        )
        batch_row = await conn.fetchval(
            "SELECT avg(octet_length(batch)) FROM kcoord_partition_batch WHERE topic = $1", topic
        )
    finally:
        await conn.close()
    return int(commit_row or 64), int(batch_row or 16 * 1024)
