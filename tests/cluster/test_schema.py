"""The cluster schema: versioned migrations, the cluster's one row, the shards' lease rows."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.migrations import MIGRATIONS
from kcoord.cluster.schema import (
    SCHEMA_VERSION,
    ClusterMismatch,
    SchemaTooNew,
    init_cluster,
    migrate,
    new_cluster_id,
    read_cluster,
    schema_version,
)


async def test_migrate_applies_each_migration_once(conn: Any) -> None:
    assert await schema_version(conn) == 0
    assert await migrate(conn) == [m.version for m in MIGRATIONS]
    assert await migrate(conn) == []
    assert await schema_version(conn) == SCHEMA_VERSION
    rows = await conn.fetch("SELECT version FROM kcoord_schema_version ORDER BY version")
    assert [r["version"] for r in rows] == [m.version for m in MIGRATIONS]


async def test_a_schema_newer_than_this_kcoord_is_refused(conn: Any) -> None:
    await migrate(conn)
    await conn.execute(
        "INSERT INTO kcoord_schema_version (version, name) VALUES ($1, 'future')", SCHEMA_VERSION + 1
    )
    with pytest.raises(SchemaTooNew):
        await migrate(conn)


async def test_init_stores_the_cluster_once_and_makes_every_lease_row(conn: Any) -> None:
    first = await init_cluster(conn, 50)
    assert first.created and first.num_shards == 50 and first.schema_version == SCHEMA_VERSION
    again = await init_cluster(conn, 50)
    assert (again.cluster_id, again.num_shards, again.created) == (first.cluster_id, 50, False)
    assert await read_cluster(conn) == (first.cluster_id, 50)
    leases = await conn.fetch("SELECT shard, owner, epoch, last_lsn FROM kcoord_shard_lease ORDER BY shard")
    assert [(r["shard"], r["owner"], r["epoch"], r["last_lsn"]) for r in leases] == [
        (s, None, 0, 0) for s in range(50)
    ]
    free = await conn.fetchval("SELECT count(*) FROM kcoord_shard_lease WHERE expires_at < now()")
    assert free == 50


async def test_init_keeps_a_given_cluster_id_and_refuses_another(conn: Any) -> None:
    info = await init_cluster(conn, 8, cluster_id="MkU3OEVBNTcwNTJENDM2Qk")
    assert info.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
    assert (await init_cluster(conn, 8, cluster_id="MkU3OEVBNTcwNTJENDM2Qk")).created is False
    with pytest.raises(ClusterMismatch, match="MkU3OEVBNTcwNTJENDM2Qk"):
        await init_cluster(conn, 8, cluster_id="another-cluster")
    with pytest.raises(ClusterMismatch, match="cannot change"):
        await init_cluster(conn, 50)
    assert await read_cluster(conn) == ("MkU3OEVBNTcwNTJENDM2Qk", 8)


async def test_the_database_itself_refuses_a_second_cluster_row(conn: Any) -> None:
    await init_cluster(conn, 50)
    with pytest.raises(asyncpg.UniqueViolationError):
        await conn.execute("INSERT INTO kcoord_cluster (cluster_id, num_shards) VALUES ('second', 50)")


async def test_concurrent_inits_agree_on_one_cluster(cluster_dsn: str) -> None:
    conns = [await asyncpg.connect(cluster_dsn) for _ in range(4)]
    try:
        infos = await asyncio.gather(*(init_cluster(c, 50) for c in conns))
    finally:
        for c in conns:
            await c.close()
    assert len({i.cluster_id for i in infos}) == 1
    assert sum(i.created for i in infos) == 1


def test_cluster_ids_look_like_kafkas() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)
