"""A cluster's PostgreSQL holding what a data directory holds, for the pipeline's `--cluster` tests.

Coordinator records go through the cluster's own writers: `kcoord cluster init`'s `init_cluster`,
`ShardLeases.acquire` and `ShardRecordLog.append` (every record of the directory's replay, in order,
so PostgreSQL keeps the newest value of each key and drops the tombstoned ones, as a node would).

Cluster-wide records and partitions: migrations 2 (`kcoord_metadata`, K3, branch h/node) and 3 (the
partition tables, K4, branch h/partitions) have not landed on main, so their tables are created here
with SQL following those branches' definitions (CREATE ... IF NOT EXISTS: once they land,
init_cluster makes them and this is a no-op), and the rows are written with SQL: each partition's
batches are the segment files' Kafka record batches, byte for byte, and its lease row carries the
log start and end as PgPartitionLog keeps them.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from kcoord import storage
from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.pg import create_pool
from kcoord.cluster.schema import init_cluster
from kcoord.cluster.shard_log import ShardRecordLog, shard_key
from kcoord.coordinator.persistence.codec import AnyRecord, from_storage
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.record_batch import BATCH_HEADER, batch_crc, framing_problem, read_header
from kcoord.storage.files import FileOps
from kcoord.storage.recovery import recover
from tests.postgres import PgServer

# From h/node's migration 2 and h/partitions' migration 3 (kcoord/cluster/migrations.py there):
# the columns the pipeline reads and those a row needs to be valid.
LATER_MIGRATIONS = """
CREATE SEQUENCE IF NOT EXISTS kcoord_metadata_seq;
CREATE TABLE IF NOT EXISTS kcoord_metadata (
    type smallint NOT NULL,
    key bytea NOT NULL,
    value bytea,
    seq bigint NOT NULL DEFAULT nextval('kcoord_metadata_seq'),
    PRIMARY KEY (type, key)
);
CREATE TABLE IF NOT EXISTS kcoord_partition_lease (
    topic text NOT NULL,
    partition integer NOT NULL CHECK (partition >= 0),
    leader integer,
    epoch bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity',
    replicas integer[],
    log_start_offset bigint NOT NULL DEFAULT 0,
    log_end_offset bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (topic, partition)
);
CREATE TABLE IF NOT EXISTS kcoord_partition_batch (
    topic text NOT NULL,
    partition integer NOT NULL,
    base_offset bigint NOT NULL,
    last_offset bigint NOT NULL,
    max_timestamp bigint NOT NULL,
    producer_id bigint NOT NULL,
    producer_epoch smallint NOT NULL,
    base_sequence integer NOT NULL,
    batch bytea NOT NULL,
    PRIMARY KEY (topic, partition, base_offset)
);
"""
PUT_METADATA = """
INSERT INTO kcoord_metadata (type, key, value) VALUES ($1, $2, $3)
ON CONFLICT (type, key) DO UPDATE SET value = excluded.value, seq = nextval('kcoord_metadata_seq')
"""
PUT_BATCH = """
INSERT INTO kcoord_partition_batch (topic, partition, base_offset, last_offset, max_timestamp,
    producer_id, producer_epoch, base_sequence, batch) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
PUT_PARTITION = """
INSERT INTO kcoord_partition_lease (topic, partition, leader, epoch, log_start_offset, log_end_offset)
VALUES ($1, $2, 1, 1, $3, $4)
ON CONFLICT (topic, partition) DO UPDATE SET log_start_offset = excluded.log_start_offset,
    log_end_offset = excluded.log_end_offset
"""


async def new_database(server: PgServer) -> str:
    """A fresh database on the session's server; its DSN."""
    import asyncpg

    name = f"p_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server.dsn())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return server.dsn(name)


async def init(dsn: str, num_shards: int = 50, later_tables: bool = True) -> None:
    """`kcoord cluster init` (migration 1), and the tables of migrations 2 and 3 if asked."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await init_cluster(conn, num_shards)
        if later_tables:
            await conn.execute(LATER_MIGRATIONS)  # no-ops now that init applies migrations 2 and 3
        else:  # a cluster that keeps only shard records (as one built by migration 1 alone)
            await conn.execute(
                "DROP TABLE kcoord_metadata, kcoord_partition_lease, kcoord_partition_batch,"
                " kcoord_partition_producer, kcoord_partition_aborted CASCADE"
            )
    finally:
        await conn.close()


async def write(dsn: str, records: list[storage.Record], num_shards: int = 50) -> dict[int, int]:
    """Each record to its shard through ShardRecordLog (lease acquired first), or to kcoord_metadata
    when no shard holds it; returns the records written per shard."""
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        leases = ShardLeases(pool, node_id=1, ttl_ms=600_000)
        logs: dict[int, ShardRecordLog] = {}
        counts: dict[int, int] = defaultdict(int)
        failures: list[BaseException] = []
        for record in records:
            domain = from_storage(record)
            key = None if domain is None else shard_key(domain)
            if domain is None or key is None:
                await pool.execute(PUT_METADATA, record.type, record.key, record.value)
                continue
            shard = shard_of(key, num_shards)
            if shard not in logs:
                epoch = await leases.acquire(shard)
                assert epoch is not None, f"shard {shard} not acquired"
                logs[shard] = ShardRecordLog(pool, shard, epoch)
            logs[shard].append([domain], lambda error: error is None or failures.append(error))
            counts[shard] += 1
        for log in logs.values():
            await log.flush()
        assert not failures, failures[:3]
        return dict(counts)
    finally:
        await pool.close()


def replayed(data_dir: Path) -> list[storage.Record]:
    """Every record recovery applies from `data_dir` (read from a copy: recovery tidies files)."""
    with tempfile.TemporaryDirectory(prefix="kcoord-replay-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("LOCK", "topics", "history"))
        out: list[storage.Record] = []
        recover(copy, storage.LogConfig(), out.append, FileOps())
        return out


def domain_records(records: list[storage.Record]) -> list[AnyRecord]:
    return [r for r in (from_storage(record) for record in records) if r is not None]


async def copy_partitions(dsn: str, data_dir: Path) -> dict[tuple[str, int], tuple[int, int]]:
    """Every whole, CRC-valid batch of each partition's segments (up to a torn tail) into
    kcoord_partition_batch, with the lease row's log start and end; returns those per partition."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    ends: dict[tuple[str, int], tuple[int, int]] = {}
    try:
        for directory in sorted((data_dir / "topics").iterdir()):
            topic, _, partition_text = directory.name.rpartition("-")
            partition = int(partition_text)
            start, end = await _copy_partition(conn, topic, partition, directory)
            await conn.execute(PUT_PARTITION, topic, partition, start, end)
            ends[(topic, partition)] = (start, end)
    finally:
        await conn.close()
    return ends


async def _copy_partition(conn: Any, topic: str, partition: int, directory: Path) -> tuple[int, int]:
    start_file = directory / "log-start-offset"
    start = int.from_bytes(start_file.read_bytes(), "big", signed=True) if start_file.exists() else 0
    segments = sorted((p for p in directory.glob("*.log") if p.stem.isdigit()), key=lambda p: int(p.stem))
    end = int(segments[0].stem) if segments else start
    start = max(start, end)
    for segment in segments:
        data = segment.read_bytes()
        position, expected = 0, int(segment.stem)
        while position < len(data):
            header = read_header(data, position) if len(data) - position >= BATCH_HEADER.size else None
            if framing_problem(header, position, len(data), expected) is not None:
                break
            assert header is not None
            if batch_crc(data, position, header.size) != header.crc:
                break
            await conn.execute(
                PUT_BATCH, topic, partition, header.base_offset, header.last_offset, header.max_timestamp,
                header.producer_id, header.producer_epoch, header.base_sequence,
                data[position : position + header.size],
            )  # fmt: skip
            position += header.size
            expected = end = header.last_offset + 1
    return start, end


async def copy_data_dir(server: PgServer, data_dir: Path) -> str:
    """A new cluster database holding `data_dir`'s coordinator records and partitions; its DSN."""
    dsn = await new_database(server)
    await init(dsn)
    await write(dsn, replayed(data_dir))
    await copy_partitions(dsn, data_dir)
    return dsn


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)
