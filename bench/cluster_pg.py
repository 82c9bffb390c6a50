"""PostgreSQL's side of a cluster bench: its CPU by process role, its WAL and statement counters, and
the settings a write-heavy operator would try (`WRITE_HEAVY`: measured, no gain per MiB; docs/cluster.md
"Where produce's database CPU goes").

CPU comes from /proc: the postmaster's children by their process title (`postgres: walwriter`,
`postgres: checkpointer`, a backend's `postgres: user db host ...`), and the postmaster's own
cutime/cstime for children that exited (autovacuum workers come and go; before, their CPU was not
counted at all). A delta of a role can be negative when one of its processes exited meanwhile: its CPU
moves to `exited`, and the sum stays right.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.postgres import PgServer

__all__ = [
    "MEASURING",
    "ROLES",
    "WRITE_HEAVY",
    "apply_settings",
    "pg_cpu",
    "pg_cpu_delta",
    "statements",
    "statements_delta",
    "wal_counters",
]

ROLES = ("backend", "walwriter", "checkpointer", "bgwriter", "autovacuum", "other", "exited")

WRITE_HEAVY: dict[str, str] = {
    # Room for the partitions' newest pages and their TOAST index: with the default 128 MB a produce
    # load evicts dirty pages as fast as it writes them, and the backends write them out themselves.
    "shared_buffers": "512MB",
    # WAL buffered between the walwriter's writes: produced bytes are WAL bytes; the default (1/32 of
    # shared_buffers, at most 16 MB) fills within one group commit at 100+ MiB/s.
    "wal_buffers": "64MB",
    # Checkpoints by time, not by WAL volume: every page first changed after a checkpoint is written to
    # the WAL whole (full_page_writes, kept on); at 1 GB a produce load checkpoints every few seconds.
    "max_wal_size": "8GB",
    "checkpoint_timeout": "15min",
    "checkpoint_completion_target": "0.9",
}
"""What `--pg-settings write-heavy` runs PostgreSQL with; durability as the defaults (fsync,
synchronous_commit and full_page_writes stay on). Measured against the defaults (bench.cluster and
bench.cluster_flush, docs/cluster.md): no lower CPU per MiB, since a produce load writes no full-page
images (every batch row goes to a new page, which needs none) and a short run reaches no checkpoint;
so it is not recommended, and the benches run PostgreSQL's defaults unless asked."""

MEASURING: dict[str, str] = {
    "shared_preload_libraries": "pg_stat_statements",
    "track_functions": "pl",
}
"""What the benches add to see where the time goes (calls and time by statement), whatever the variant."""


def _role(title: str) -> str:
    for word, role in (("walwriter", "walwriter"), ("checkpointer", "checkpointer"),
                       ("background writer", "bgwriter"), ("autovacuum worker", "autovacuum"),
                       ("launcher", "other"), ("archiver", "other"), ("logger", "other")):  # fmt: skip
        if word in title:
            return role
    return "backend"


def pg_cpu(pg: PgServer | None) -> dict[str, float]:
    """CPU seconds so far of the postmaster's children by role (`ROLES`), and its own as `other`."""
    out = dict.fromkeys(ROLES, 0.0)
    pid = pg.postmaster_pid() if pg is not None else None
    if pid is None:
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if stat.parent.name == str(pid):
                out["other"] += (int(fields[11]) + int(fields[12])) / tick
                out["exited"] += (int(fields[13]) + int(fields[14])) / tick
            elif fields[1] == str(pid):
                title = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out[_role(title)] += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue  # a process that exited meanwhile
    return out


def pg_cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {role: after[role] - before[role] for role in ROLES}


async def apply_settings(pg: PgServer, settings: dict[str, str]) -> None:
    """ALTER SYSTEM each setting (and `MEASURING`) and restart the server (shared_buffers,
    wal_buffers and the preloaded library need it)."""
    import asyncpg

    settings = {**settings, **MEASURING}
    conn = await asyncpg.connect(pg.dsn())
    try:
        for name, value in settings.items():
            await conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    finally:
        await conn.close()
    pg.stop()
    pg.start()


async def wal_counters(dsn: str) -> dict[str, float]:
    """WAL bytes so far (the insert position: exact), and pg_stat_wal's records and full-page images
    (PostgreSQL 14 and later; a backend reports them at most once a second, or when it exits, so a
    reading taken while backends run lags by up to a second of theirs)."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        row: Any = await conn.fetchrow(
            "SELECT wal_records, wal_fpi, pg_current_wal_insert_lsn() - '0/0'::pg_lsn FROM pg_stat_wal"
        )
    finally:
        await conn.close()
    return {"records": float(row[0]), "fpi": float(row[1]), "bytes": float(row[2])}


async def statements(dsn: str) -> dict[str, tuple[float, float]]:
    """pg_stat_statements so far: the first 60 characters of each statement -> (calls, total ms);
    empty where the extension cannot be made."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = await conn.fetch(
            "SELECT left(query, 60), sum(calls), sum(total_exec_time) FROM pg_stat_statements GROUP BY 1"
        )
    except asyncpg.PostgresError:
        return {}
    finally:
        await conn.close()
    return {str(r[0]): (float(r[1]), float(r[2])) for r in rows}


def statements_delta(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]], top: int = 6
) -> list[tuple[str, float, float]]:
    """The `top` statements by time between two `statements` readings: (text, calls, ms)."""
    out = []
    for text, (calls, ms) in after.items():
        calls0, ms0 = before.get(text, (0.0, 0.0))
        if calls > calls0:
            out.append((text, calls - calls0, ms - ms0))
    return sorted(out, key=lambda e: -e[2])[:top]
