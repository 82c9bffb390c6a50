"""Shared by the cluster tests: a cluster on the test's database and group ids per shard."""

from __future__ import annotations

import itertools
from typing import Any

import asyncpg

from kcoord.cluster.schema import init_cluster
from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.runtime.shards import shard_of


async def init(dsn: str, num_shards: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await init_cluster(conn, num_shards)
    finally:
        await conn.close()


def group_in(shard: int, num_shards: int, prefix: str = "g") -> str:
    """The first group id `{prefix}-N` that lives in `shard`."""
    return next(g for g in (f"{prefix}-{i}" for i in itertools.count()) if shard_of(g, num_shards) == shard)


def commit(group: str, partition: int, offset: int, topic: str = "t") -> OffsetCommitRecord:
    return OffsetCommitRecord(group, topic, partition, offset, -1, "", 1_700_000_000_000)


async def rows(pool: Any, shard: int) -> list[tuple[int, bytes, bytes, int]]:
    found = await pool.fetch(
        "SELECT type, key, value, lsn FROM kcoord_record WHERE shard = $1 ORDER BY lsn", shard
    )
    return [(r["type"], r["key"], r["value"], r["lsn"]) for r in found]
