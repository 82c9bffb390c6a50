"""The bounds a node's pool puts on its PostgreSQL sessions (kcoord/cluster/pg.py), checked on
the session's server: the server-side settings, and a lease statement stuck behind a row lock."""

from __future__ import annotations

import time
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.pg import COMMAND_TIMEOUT_S, LOCK_TIMEOUT_MS, create_pool
from kcoord.cluster.schema import init_cluster

TTL_MS = 1500


async def test_a_node_pool_bounds_lock_waits_and_idle_transactions(cluster_dsn: str, conn: Any) -> None:
    """The node's pool sessions carry the server-side bounds, and a lease statement stuck behind a
    row lock another session holds (a node cut off inside a transaction) fails with a definite
    LockNotAvailable instead of waiting for as long as the holder is gone."""
    await init_cluster(conn, 4)
    pool = await create_pool(cluster_dsn, node_id=1, min_size=1, max_size=2)
    try:
        assert await pool.fetchval("SHOW lock_timeout") == f"{LOCK_TIMEOUT_MS // 1000}s"
        assert await pool.fetchval("SHOW idle_in_transaction_session_timeout") == "5s"
        async with conn.transaction():  # the row lock a stuck transaction would hold
            await conn.execute("UPDATE kcoord_shard_lease SET epoch = epoch WHERE shard = 0")
            started = time.monotonic()
            with pytest.raises(asyncpg.LockNotAvailableError):
                await ShardLeases(pool, 1, TTL_MS).acquire(0)
            waited = time.monotonic() - started
        assert LOCK_TIMEOUT_MS / 1000 - 0.5 < waited < COMMAND_TIMEOUT_S
        assert await ShardLeases(pool, 1, TTL_MS).acquire(0) == 1  # free again: taken at once
    finally:
        await pool.close()
