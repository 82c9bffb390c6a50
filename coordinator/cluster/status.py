"""`kcoord cluster status --cluster DSN`: the nodes, and each shard's owner and epoch, as PostgreSQL
holds them (times are the database's). One line per node, then one per shard, then one per partition
that ever had a leader (migration 3), with its log start and end offsets:

    node 1 127.0.0.1:9092 live expires_in_ms=1200
    shard 0 owner=2 epoch=3 live expires_in_ms=900
    partition events-0 leader=1 epoch=2 live expires_in_ms=800 log_start=0 log_end=42
"""

from __future__ import annotations

from typing import Any

__all__ = ["status_lines"]

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


async def status_lines(conn: Any) -> list[str]:
    lines = []
    for r in await conn.fetch(_NODES):
        state = "live" if r["live"] else "expired"
        lines.append(
            f"node {r['node_id']} {r['host']}:{r['port']} {state} expires_in_ms={r['expires_in_ms']}"
        )
    for r in await conn.fetch(_SHARDS):
        owner = "-" if r["owner"] is None else r["owner"]
        state = "live" if r["live"] else "free"
        expires = "-" if r["expires_in_ms"] is None else r["expires_in_ms"]
        lines.append(f"shard {r['shard']} owner={owner} epoch={r['epoch']} {state} expires_in_ms={expires}")
    if await conn.fetchval("SELECT to_regclass('kcoord_partition_lease') IS NOT NULL"):
        lines.extend(_partition_line(r) for r in await conn.fetch(_PARTITIONS))
    return lines


def _partition_line(r: Any) -> str:
    leader = "-" if r["leader"] is None else r["leader"]
    state = "live" if r["live"] else "free"
    expires = "-" if r["expires_in_ms"] is None else r["expires_in_ms"]
    return (
        f"partition {r['topic']}-{r['partition']} leader={leader} epoch={r['epoch']} {state} "
        f"expires_in_ms={expires} log_start={r['log_start_offset']} log_end={r['log_end_offset']}"
    )
