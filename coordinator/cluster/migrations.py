"""The cluster schema's migrations, as SQL in Python strings (the wheel ships only .py files).

Each migration runs once, in order, in one transaction with its row in `kcoord_schema_version`
(`schema.migrate`). A released migration never changes: a change is a new one appended here. Later
rooms (partitions, cluster-wide metadata) append theirs.

Times are PostgreSQL's (`now()`), never a node's: nodes' clocks need not agree.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FENCED_SQLSTATE", "MIGRATIONS", "Migration"]

FENCED_SQLSTATE = "KC001"
"""Raised by `kcoord_append` when the caller's lease epoch is not the shard's current one. Class
"KC" is implementation-defined (the SQL standard keeps 0-4 and A-H) and unused by PostgreSQL."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


_TABLES = """
CREATE TABLE kcoord_cluster (
    cluster_id text NOT NULL,
    num_shards integer NOT NULL CHECK (num_shards > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
-- One row, ever: a second cluster id is refused by the database itself.
CREATE UNIQUE INDEX kcoord_cluster_one_row ON kcoord_cluster ((true));

CREATE TABLE kcoord_node (
    node_id integer PRIMARY KEY,
    host text NOT NULL,
    port integer NOT NULL,
    rack text,
    expires_at timestamptz NOT NULL
);

-- One row per shard (made by `kcoord cluster init`). owner NULL = free; an acquire bumps epoch.
CREATE TABLE kcoord_shard_lease (
    shard integer PRIMARY KEY CHECK (shard >= 0),
    owner integer,
    epoch bigint NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity',
    last_lsn bigint NOT NULL DEFAULT 0
);

-- A shard's compacted log: the newest value of each (type, key); a tombstone deletes the row.
-- fillfactor leaves room for HOT updates (no indexed column changes when an offset is re-committed).
CREATE TABLE kcoord_record (
    shard integer NOT NULL,
    type smallint NOT NULL,
    key bytea NOT NULL,
    value bytea NOT NULL,
    lsn bigint NOT NULL,
    PRIMARY KEY (shard, type, key)
) WITH (fillfactor = 80);
"""

# The fence (cluster-notes.md, "Fencing"): the guarded UPDATE takes the lease row's lock. A taker's
# epoch bump takes the same lock, and under Read Committed a statement that waited for it re-checks
# its WHERE clause against the newest committed row. So a batch either commits before the bump (and
# the taker, loading after its bump, sees it) or finds the new epoch and raises: nothing of it stays.
# One server-side call per batch: a paused client can never sit on the lock between statements.
_APPEND = f"""
CREATE FUNCTION kcoord_append(
    p_shard integer, p_epoch bigint,
    p_types smallint[], p_keys bytea[], p_values bytea[], p_lsns bigint[]
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_last_lsn bigint;
BEGIN
    UPDATE kcoord_shard_lease
       SET last_lsn = GREATEST(last_lsn, COALESCE((SELECT max(l) FROM unnest(p_lsns) AS l), last_lsn))
     WHERE shard = p_shard AND epoch = p_epoch
    RETURNING last_lsn INTO v_last_lsn;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kcoord: shard % is not held at epoch %', p_shard, p_epoch
            USING ERRCODE = '{FENCED_SQLSTATE}', HINT = 'another node took the shard over';
    END IF;
    -- An acknowledged batch must survive a crash even where the session's default is off.
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- The newest entry of each key wins within the batch (a later tombstone deletes).
    WITH batch AS (
        SELECT DISTINCT ON (b.type, b.key) b.type, b.key, b.value, b.lsn
          FROM unnest(p_types, p_keys, p_values, p_lsns) WITH ORDINALITY AS b(type, key, value, lsn, ord)
         ORDER BY b.type, b.key, b.ord DESC
    ), deleted AS (
        DELETE FROM kcoord_record AS r USING batch
         WHERE batch.value IS NULL AND r.shard = p_shard AND r.type = batch.type AND r.key = batch.key
    )
    INSERT INTO kcoord_record AS r (shard, type, key, value, lsn)
    SELECT p_shard, batch.type, batch.key, batch.value, batch.lsn FROM batch WHERE batch.value IS NOT NULL
    ON CONFLICT (shard, type, key) DO UPDATE SET value = excluded.value, lsn = excluded.lsn;
    RETURN v_last_lsn;
END
$fn$;
"""

# Migration 2 (node wiring, K3): cluster-wide records and producer id blocks.
# * kcoord_metadata: the records no shard holds (`shard_log.shard_key` None: topics, producer id
#   blocks, ACLs, SCRAM credentials), newest value per (type, key). A tombstone stays as a row with a
#   NULL value, so a node following the table by `seq` sees deletions too. Every write bumps `seq`
#   from one sequence and notifies channel `kcoord_metadata`; nodes replay the table at start and
#   then read `seq > last seen` on a notification or every poll (bounded staleness).
# * kcoord_producer_id_block: producer ids in blocks of 1,000 (Kafka's ProducerIdsBlock); nextval is
#   never handed out twice, across nodes and crashes, so two nodes never give out the same id.
# * kcoord_node.endpoints: each node's advertised endpoint per listener name, {"NAME": [host, port]}.
_METADATA = """
CREATE SEQUENCE kcoord_metadata_seq;
CREATE TABLE kcoord_metadata (
    type smallint NOT NULL,
    key bytea NOT NULL,
    value bytea,
    seq bigint NOT NULL DEFAULT nextval('kcoord_metadata_seq'),
    PRIMARY KEY (type, key)
);
CREATE INDEX kcoord_metadata_by_seq ON kcoord_metadata (seq);
CREATE SEQUENCE kcoord_producer_id_block START WITH 0 MINVALUE 0;
ALTER TABLE kcoord_node ADD COLUMN endpoints jsonb NOT NULL DEFAULT '{}';

CREATE FUNCTION kcoord_metadata_put(p_types smallint[], p_keys bytea[], p_values bytea[])
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_seq bigint;
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- One row per (type, key), the batch's newest entry winning, each with a fresh seq in batch order.
    INSERT INTO kcoord_metadata AS m (type, key, value, seq)
    SELECT b.type, b.key, b.value, nextval('kcoord_metadata_seq')
      FROM (SELECT DISTINCT ON (u.type, u.key) u.type, u.key, u.value, u.ord
              FROM unnest(p_types, p_keys, p_values) WITH ORDINALITY AS u(type, key, value, ord)
             ORDER BY u.type, u.key, u.ord DESC) AS b
     ORDER BY b.ord
    ON CONFLICT (type, key) DO UPDATE SET value = excluded.value, seq = excluded.seq;
    SELECT max(seq) INTO v_seq FROM kcoord_metadata;
    PERFORM pg_notify('kcoord_metadata', v_seq::text);
    RETURN v_seq;
END
$fn$;
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "cluster, nodes, shard leases, records, kcoord_append", _TABLES + _APPEND),
    Migration(2, "cluster-wide metadata, producer id blocks, node endpoints", _METADATA),
)
