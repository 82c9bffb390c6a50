"""`kcoord cluster status --cluster DSN [--json]`: the nodes (live and expired), each shard's owner and
epoch, and each partition's leader and epoch, as PostgreSQL holds them (times are the database's, so
the answer does not depend on the clock of the machine asking). One line per node, shard and
partition:

    node 1 127.0.0.1:9092 live expires_in_ms=1200
    shard 0 owner=2 epoch=3 live expires_in_ms=900
    partition orders-0 leader=1 epoch=2 live expires_in_ms=1100 log_start=0 log_end=42

`--json`: one object `{"nodes": [...], "shards": [...], "partitions": [...]}` with the same fields
(`expires_in_ms` null for a lease never held or released; `owner`/`leader` null when free).
"""

from __future__ import annotations

from typing import Any

__all__ = ["status_lines", "status_report"]

_NODES = """
SELECT node_id, host, port, expires_at > now() AS live,
       (extract(epoch FROM expires_at - now()) * 1000)::bigint AS expires_in_ms
  FROM kcoord_node ORDER BY node_id
"""
_SHARDS = """
SELECT shard, owner, epoch, owner IS NOT NULL AND expires_at > now() AS live,
       CASE WHEN expires_at = '-infinity' THEN NULL
            ELSE (extract(epoch FROM expires_at - now()) * 1000)::bigint END AS expires_in_ms
  FROM kcoord_shard_lease ORDER BY shard
"""
_PARTITIONS = """
SELECT topic, partition, leader, epoch, leader IS NOT NULL AND expires_at > now() AS live,
       CASE WHEN expires_at = '-infinity' THEN NULL
            ELSE (extract(epoch FROM expires_at - now()) * 1000)::bigint END AS expires_in_ms,
       log_start_offset, log_end_offset
  FROM kcoord_partition_lease ORDER BY topic, partition
"""


async def status_report(conn: Any) -> dict[str, list[dict[str, Any]]]:
    """The cluster's nodes, shards and partitions, read in one snapshot (repeatable read)."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        nodes = [dict(r) for r in await conn.fetch(_NODES)]
        shards = [dict(r) for r in await conn.fetch(_SHARDS)]
        partitions = [dict(r) for r in await conn.fetch(_PARTITIONS)]
    return {"nodes": nodes, "shards": shards, "partitions": partitions}


def status_lines(report: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = []
    for r in report["nodes"]:
        state = "live" if r["live"] else "expired"
        lines.append(
            f"node {r['node_id']} {r['host']}:{r['port']} {state} expires_in_ms={r['expires_in_ms']}"
        )
    for r in report["shards"]:
        lines.append(
            f"shard {r['shard']} owner={_dash(r['owner'])} epoch={r['epoch']} "
            f"{'live' if r['live'] else 'free'} expires_in_ms={_dash(r['expires_in_ms'])}"
        )
    for r in report["partitions"]:
        lines.append(
            f"partition {r['topic']}-{r['partition']} leader={_dash(r['leader'])} epoch={r['epoch']} "
            f"{'live' if r['live'] else 'free'} expires_in_ms={_dash(r['expires_in_ms'])} "
            f"log_start={r['log_start_offset']} log_end={r['log_end_offset']}"
        )
    return lines


def _dash(value: object) -> str:
    return "-" if value is None else str(value)
