"""What the pipeline reads of a cluster's PostgreSQL: every table and column it names, in one place.

The pipeline may import only storage and protocol, never `coordinator.cluster`, so the schema the
cluster's migrations create (`kcoord/cluster/migrations.py`) is a documented format here, as the
segment files are for a data directory (docs/cluster.md, "What the pipeline reads"):

* `kcoord_cluster (cluster_id, num_shards)`: one row; its absence means "not a kcoord cluster";
* `kcoord_record (shard, type, key, value, lsn)` (migration 1): each shard's compacted coordinator
  log, the same key and value bytes the local log frames, the newest value of each key;
* `kcoord_metadata (type, key, value, seq)` (migration 2): cluster-wide records (topics, producer id
  blocks, ACLs, credentials), newest per key, a NULL value a tombstone; `seq` orders the writes;
* `kcoord_partition_lease (topic, partition, log_start_offset, log_end_offset)` and
  `kcoord_partition_batch (topic, partition, base_offset, last_offset, batch)` (migration 3): each
  partition's log start and end, and its Kafka record batches verbatim, as the segment files hold them.

psycopg 3 (the `pipeline` extra) is the driver: synchronous, so Spark's executors each open their own
connection, and free of asyncpg (the `cluster` extra, the server's). It is imported only on use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kcoord.pipeline.reader import PipelineError

CLUSTER = "kcoord_cluster"
RECORD = "kcoord_record"
METADATA = "kcoord_metadata"
PARTITION_LEASE = "kcoord_partition_lease"
PARTITION_BATCH = "kcoord_partition_batch"

CONNECT_TIMEOUT_S = 10
APPLICATION_NAME = "kcoord-pipeline"

# -- the statements (the columns named here are the format) ------------------------------------------
CLUSTER_ROW = f"SELECT cluster_id, num_shards FROM {CLUSTER}"
TABLES_PRESENT = (
    "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL"
)
SHARD_SIZES = f"SELECT shard, count(*) FROM {RECORD} GROUP BY shard"
SHARD_RECORDS = f"SELECT type, key, value, lsn FROM {RECORD} WHERE shard = ANY(%s)"
METADATA_RECORDS = f"SELECT type, key, value, seq FROM {METADATA}"
PARTITION_ENDS = (
    f"SELECT topic, partition, log_start_offset, log_end_offset FROM {PARTITION_LEASE}"
    " ORDER BY topic, partition"
)
# A range's batches: those starting in [from, to) that reach the wanted offsets (last_offset >= lo).
PARTITION_BATCHES = (
    f"SELECT base_offset, batch FROM {PARTITION_BATCH} WHERE topic = %s AND partition = %s"
    " AND last_offset >= %s AND base_offset >= %s AND base_offset < %s ORDER BY base_offset"
)

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@/]*@")
_PASSWORD_PARAM = re.compile(r"((?:^|[?&\s])password=)[^&\s]*")


def redact(dsn: str) -> str:
    """The DSN without its password (in the user info, as a `password=` parameter or keyword)."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD.sub(r"\1***@", dsn))


def connect(dsn: str) -> Any:
    """A read-only psycopg connection (`psycopg.Connection`); a one-line PipelineError if it fails."""
    try:
        import psycopg
    except ImportError:
        raise PipelineError("--cluster needs psycopg 3: pip install 'kcoord[pipeline]'") from None
    try:
        conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, application_name=APPLICATION_NAME)
    except (psycopg.Error, ValueError) as exc:
        raise PipelineError(f"cluster {redact(dsn)}: cannot connect: {_first_line(exc)}") from None
    conn.read_only = True
    return conn


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class ClusterSchema:
    """What a cluster's database holds: its id and shard count, and which optional tables exist."""

    cluster_id: str
    num_shards: int
    has_metadata: bool  # migration 2: cluster-wide records
    has_partitions: bool  # migration 3: partitions in PostgreSQL


def read_schema(conn: Any, dsn: str) -> ClusterSchema:
    """The cluster row and the tables present; PipelineError when this is not a kcoord cluster."""
    with conn.cursor() as cur:
        cur.execute(TABLES_PRESENT, (CLUSTER, METADATA, PARTITION_BATCH))
        has_cluster, has_metadata, has_partitions = cur.fetchone()
        row = None
        if has_cluster:
            cur.execute(CLUSTER_ROW)
            row = cur.fetchone()
    conn.rollback()  # end the read's transaction: the connection may sit idle between statements
    if row is None:
        raise PipelineError(f"cluster {redact(dsn)}: not a kcoord cluster (run `kcoord cluster init`)")
    return ClusterSchema(str(row[0]), int(row[1]), bool(has_metadata), bool(has_partitions))


def schema_of(dsn: str) -> ClusterSchema:
    """Connect, read the schema, close: the driver's check before Spark plans anything."""
    conn = connect(dsn)
    try:
        return read_schema(conn, dsn)
    finally:
        conn.close()
