"""Creating and upgrading the cluster schema, and the cluster's one row (`kcoord cluster init`).

`migrate` applies the migrations of `migrations.MIGRATIONS` not yet recorded in
`kcoord_schema_version`, under an advisory lock so that concurrent inits serialize. `init_cluster`
then stores the cluster id and shard count once and makes the shards' lease rows; run again, it
changes nothing and answers the stored values. The shard count never changes after deployment
(Kafka: `offsets.topic.num.partitions`, GroupCoordinatorConfig.java), and a cluster has one id.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any

from kcoord.cluster.migrations import MIGRATIONS

__all__ = [
    "SCHEMA_VERSION",
    "ClusterInfo",
    "ClusterMismatch",
    "SchemaTooNew",
    "init_cluster",
    "migrate",
    "new_cluster_id",
    "read_cluster",
    "schema_version",
]

SCHEMA_VERSION = MIGRATIONS[-1].version
_LOCK_KEY = 0x6B636F6F7264  # "kcoord": pg_advisory_xact_lock's key for schema changes and init

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS kcoord_schema_version (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class SchemaTooNew(Exception):
    """The database's schema is newer than this kcoord knows: run a newer kcoord."""


class ClusterMismatch(Exception):
    """The database belongs to another cluster id or shard count than the one asked for."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    cluster_id: str
    num_shards: int
    schema_version: int
    created: bool
    """True when this call stored the cluster row (the first init)."""


def new_cluster_id() -> str:
    """A Kafka-style cluster id: a random UUID in URL-safe base64 without padding (Kafka's
    `Uuid.randomUuid().toString()`, clients/.../common/Uuid.java), never starting with '-' (Kafka
    redraws those so the id cannot be taken for a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


async def schema_version(conn: Any) -> int:
    """The newest migration applied, 0 on an empty database."""
    exists = await conn.fetchval("SELECT to_regclass('kcoord_schema_version') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT COALESCE(max(version), 0) FROM kcoord_schema_version"))


async def migrate(conn: Any) -> list[int]:
    """Apply the missing migrations in one transaction; the versions applied now (empty: current)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute(_VERSION_TABLE)
        current = await schema_version(conn)
        if current > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"the database's schema is version {current}; this kcoord knows {SCHEMA_VERSION}"
            )
        # Every migration not recorded, not only those above the newest: branches add migrations
        # with reserved numbers (2: metadata, 3: partitions), and a database may have run 3 first.
        done = {int(r[0]) for r in await conn.fetch("SELECT version FROM kcoord_schema_version")}
        applied = []
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO kcoord_schema_version (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
    return applied


async def read_cluster(conn: Any) -> tuple[str, int] | None:
    """The stored (cluster_id, num_shards), None before the first init."""
    if await schema_version(conn) == 0:
        return None
    row = await conn.fetchrow("SELECT cluster_id, num_shards FROM kcoord_cluster")
    return None if row is None else (str(row["cluster_id"]), int(row["num_shards"]))


async def init_cluster(conn: Any, num_shards: int, cluster_id: str | None = None) -> ClusterInfo:
    """Create or upgrade the schema and store the cluster once; idempotent.

    `cluster_id` None: keep the stored one (or make one). Raises `ClusterMismatch` when the database
    already holds another cluster id or shard count, `SchemaTooNew` from `migrate`."""
    if num_shards <= 0:
        raise ValueError(f"--num-shards must be positive, not {num_shards}")
    await migrate(conn)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        stored = await read_cluster(conn)
        created = stored is None
        if stored is None:
            stored = (cluster_id or new_cluster_id(), num_shards)
            await conn.execute("INSERT INTO kcoord_cluster (cluster_id, num_shards) VALUES ($1, $2)", *stored)
        _check_same(stored, num_shards, cluster_id)
        # Every shard's lease row: free (owner NULL), epoch 0, already expired.
        await conn.execute(
            "INSERT INTO kcoord_shard_lease (shard) SELECT generate_series(0, $1 - 1) ON CONFLICT DO NOTHING",
            stored[1],
        )
    return ClusterInfo(stored[0], stored[1], SCHEMA_VERSION, created)


def _check_same(stored: tuple[str, int], num_shards: int, cluster_id: str | None) -> None:
    if cluster_id is not None and cluster_id != stored[0]:
        raise ClusterMismatch(f"the database holds cluster {stored[0]}, not {cluster_id}")
    if num_shards != stored[1]:
        raise ClusterMismatch(
            f"cluster {stored[0]} has {stored[1]} shards; the shard count cannot change (asked {num_shards})"
        )
