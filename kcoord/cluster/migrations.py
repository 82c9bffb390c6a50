"""The cluster schema's migrations, as SQL in Python strings (the wheel ships only .py files).

Each migration runs once, in order, in one transaction with its row in `kcoord_schema_version`
(`schema.migrate`). A released migration never changes: a change is a new one appended here. Later
rooms (partitions, cluster-wide metadata) append theirs.

Times are PostgreSQL's (`now()`), never a node's: nodes' clocks need not agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.cluster.migration_flush import FLUSH
from kcoord.cluster.migration_group_configs import GROUP_CONFIGS
from kcoord.cluster.migration_metadata_expect import METADATA_EXPECT, STALE_METADATA_SQLSTATE
from kcoord.cluster.migration_tail import TAIL
from kcoord.cluster.share_fence_migration import SHARE_DELETE_FENCE
from kcoord.cluster.share_migration import SHARE_STATE

__all__ = [
    "FENCED_SQLSTATE",
    "IDENTITY_TAKEN_SQLSTATE",
    "MIGRATIONS",
    "OFFSET_MISMATCH_SQLSTATE",
    "STALE_METADATA_SQLSTATE",
    "Migration",
]

FENCED_SQLSTATE = "KC001"
"""Raised by `kcoord_append` when the caller's lease epoch is not the shard's current one. Class
"KC" is implementation-defined (the SQL standard keeps 0-4 and A-H) and unused by PostgreSQL."""


OFFSET_MISMATCH_SQLSTATE = "KC002"
"""Raised by `kcoord_partition_append` when the batch does not start at the partition's stored log
end offset: the leader's memory no longer matches the table (an earlier call's outcome was unknown)."""

IDENTITY_TAKEN_SQLSTATE = "KC003"
"""Raised by `kcoord_metadata_put` when an entry carrying an identity (a topic record: its topic id)
meets a live row of its key with another identity: the name is another topic's (another node created
it first, or the writer's copy is stale). Nothing of the batch was written; DETAIL lists the refused
keys in hex, comma-separated."""


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

# Migration 2 (node wiring): cluster-wide records and producer id blocks.
# * kcoord_metadata: the records no shard holds (`shard_log.shard_key` None: topics, producer id
#   blocks, ACLs, SCRAM credentials), newest value per (type, key). A tombstone stays as a row with a
#   NULL value, so a node following the table by `seq` sees deletions too. Every write bumps `seq`
#   from one sequence and notifies channel `kcoord_metadata`; nodes replay the table at start and
#   then read `seq > last seen` on a notification or every poll (bounded staleness). `identity` is
#   what a key's live row may not change without a tombstone first: a topic's id. A topic record
#   for a name another topic holds is refused (IDENTITY_TAKEN_SQLSTATE), so two nodes creating one
#   name at once make one topic (Kafka's controller serialises creation: ReplicationControlManager.
#   createTopics answers TOPIC_ALREADY_EXISTS), and a node's stale copy cannot overwrite a newer topic.
# * kcoord_producer_id_block: producer ids in blocks of 1,000 (Kafka's ProducerIdsBlock); nextval is
#   never handed out twice, across nodes and crashes, so two nodes never give out the same id.
# * kcoord_node.endpoints: each node's advertised endpoint per listener name, {"NAME": [host, port]}.
_METADATA_LOCK_KEY = 0x6B636F6F72646D  # "kcoordm": pg_advisory_xact_lock's key for metadata writes
_METADATA = f"""
CREATE SEQUENCE kcoord_metadata_seq;
CREATE TABLE kcoord_metadata (
    type smallint NOT NULL,
    key bytea NOT NULL,
    value bytea,
    identity bytea,
    seq bigint NOT NULL DEFAULT nextval('kcoord_metadata_seq'),
    PRIMARY KEY (type, key)
);
CREATE INDEX kcoord_metadata_by_seq ON kcoord_metadata (seq);
CREATE SEQUENCE kcoord_producer_id_block START WITH 0 MINVALUE 0;
ALTER TABLE kcoord_node ADD COLUMN endpoints jsonb NOT NULL DEFAULT '{{}}';

CREATE FUNCTION kcoord_metadata_put(
    p_types smallint[], p_keys bytea[], p_values bytea[], p_identities bytea[] DEFAULT NULL
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_seq bigint;
    v_taken text;
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- One writer at a time, until commit: the identity check and the write cannot interleave with
    -- another node's, and seq order is commit order (a follower reading seq > last never skips a
    -- row committed late with a smaller seq).
    PERFORM pg_advisory_xact_lock({_METADATA_LOCK_KEY});
    SELECT string_agg(DISTINCT encode(u.key, 'hex'), ',') INTO v_taken
      FROM unnest(p_types, p_keys, p_identities) AS u(type, key, identity)
      JOIN kcoord_metadata AS m ON m.type = u.type AND m.key = u.key
     WHERE u.identity IS NOT NULL AND m.value IS NOT NULL AND m.identity IS DISTINCT FROM u.identity;
    IF v_taken IS NOT NULL THEN
        RAISE EXCEPTION 'kcoord_metadata_put: keys held by another identity'
            USING ERRCODE = '{IDENTITY_TAKEN_SQLSTATE}', DETAIL = v_taken;
    END IF;
    -- One row per (type, key), the batch's newest entry winning, each with a fresh seq in batch order.
    INSERT INTO kcoord_metadata AS m (type, key, value, identity, seq)
    SELECT b.type, b.key, b.value, b.identity, nextval('kcoord_metadata_seq')
      FROM (SELECT DISTINCT ON (u.type, u.key) u.type, u.key, u.value, u.identity, u.ord
              FROM unnest(p_types, p_keys, p_values, p_identities)
                   WITH ORDINALITY AS u(type, key, value, identity, ord)
             ORDER BY u.type, u.key, u.ord DESC) AS b
     ORDER BY b.ord
    ON CONFLICT (type, key)
    DO UPDATE SET value = excluded.value, identity = excluded.identity, seq = excluded.seq;
    SELECT max(seq) INTO v_seq FROM kcoord_metadata;
    PERFORM pg_notify('kcoord_metadata', v_seq::text);
    RETURN v_seq;
END
$fn$;
"""

# Migration 3 (issue 27, partitions in PostgreSQL). A partition's lease row is made by its first
# acquire; it carries the log start and end offsets, so the fence, the offset continuity check and
# the data share one row lock. A batch row is a whole Kafka record batch as the local log stores it
# (offsets assigned); producer rows are the durable ProducerStateEntry after the newest batch (the
# last five batches packed as >iiqq: first/last sequence, first/last offset); aborted rows are
# Kafka's .txnindex entries (TransactionIndex: producer, first, last = the marker's, last stable).
_PARTITIONS = """
CREATE TABLE kcoord_partition_lease (
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

CREATE TABLE kcoord_partition_batch (
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

CREATE TABLE kcoord_partition_producer (
    topic text NOT NULL,
    partition integer NOT NULL,
    producer_id bigint NOT NULL,
    producer_epoch smallint NOT NULL,
    coordinator_epoch integer NOT NULL,
    last_timestamp bigint NOT NULL,
    txn_first_offset bigint NOT NULL,
    batches bytea NOT NULL,
    PRIMARY KEY (topic, partition, producer_id)
);

CREATE TABLE kcoord_partition_aborted (
    topic text NOT NULL,
    partition integer NOT NULL,
    producer_id bigint NOT NULL,
    first_offset bigint NOT NULL,
    last_offset bigint NOT NULL,
    last_stable_offset bigint NOT NULL,
    PRIMARY KEY (topic, partition, last_offset)
);
"""

# The same fence as kcoord_append (see there): the guarded UPDATE of the lease row, at the caller's
# epoch AND at the log end offset the batches start from; no row matched raises and nothing stays.
# The continuity check means no offset is ever handed out twice, even by a leader whose earlier call
# is still running after its connection broke.
_PARTITION_APPEND = f"""
CREATE FUNCTION kcoord_partition_append(
    p_topic text, p_partition integer, p_epoch bigint, p_start bigint, p_end bigint,
    b_base bigint[], b_last bigint[], b_max_ts bigint[], b_pid bigint[], b_pepoch smallint[],
    b_seq integer[], b_data bytea[],
    s_pid bigint[], s_epoch smallint[], s_coord integer[], s_ts bigint[], s_txn bigint[], s_batches bytea[],
    a_pid bigint[], a_first bigint[], a_last bigint[], a_lso bigint[]
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_epoch bigint;
    v_end bigint;
BEGIN
    UPDATE kcoord_partition_lease SET log_end_offset = p_end
     WHERE topic = p_topic AND partition = p_partition AND epoch = p_epoch AND log_end_offset = p_start;
    IF NOT FOUND THEN
        SELECT epoch, log_end_offset INTO v_epoch, v_end
          FROM kcoord_partition_lease WHERE topic = p_topic AND partition = p_partition;
        IF v_epoch IS DISTINCT FROM p_epoch THEN
            RAISE EXCEPTION 'kcoord: partition %-% is not led at epoch %', p_topic, p_partition, p_epoch
                USING ERRCODE = '{FENCED_SQLSTATE}', HINT = 'another node leads the partition';
        END IF;
        RAISE EXCEPTION 'kcoord: partition %-% ends at %, not %', p_topic, p_partition, v_end, p_start
            USING ERRCODE = '{OFFSET_MISMATCH_SQLSTATE}';
    END IF;
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    INSERT INTO kcoord_partition_batch
        (topic, partition, base_offset, last_offset, max_timestamp, producer_id, producer_epoch,
         base_sequence, batch)
    SELECT p_topic, p_partition, b.*
      FROM unnest(b_base, b_last, b_max_ts, b_pid, b_pepoch, b_seq, b_data) AS b;
    INSERT INTO kcoord_partition_producer AS p
        (topic, partition, producer_id, producer_epoch, coordinator_epoch, last_timestamp,
         txn_first_offset, batches)
    SELECT p_topic, p_partition, s.* FROM unnest(s_pid, s_epoch, s_coord, s_ts, s_txn, s_batches) AS s
    ON CONFLICT (topic, partition, producer_id) DO UPDATE
       SET producer_epoch = excluded.producer_epoch, coordinator_epoch = excluded.coordinator_epoch,
           last_timestamp = excluded.last_timestamp, txn_first_offset = excluded.txn_first_offset,
           batches = excluded.batches;
    INSERT INTO kcoord_partition_aborted
        (topic, partition, producer_id, first_offset, last_offset, last_stable_offset)
    SELECT p_topic, p_partition, a.* FROM unnest(a_pid, a_first, a_last, a_lso) AS a;
    RETURN p_end;
END
$fn$;

-- DeleteRecords and retention: a new log start, fenced like an append; whole batches below it go,
-- with the aborted transactions that ended below it (Kafka deletes a segment with its .txnindex).
CREATE FUNCTION kcoord_partition_trim(
    p_topic text, p_partition integer, p_epoch bigint, p_start bigint
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_start bigint;
BEGIN
    UPDATE kcoord_partition_lease
       SET log_start_offset = GREATEST(log_start_offset, LEAST(p_start, log_end_offset))
     WHERE topic = p_topic AND partition = p_partition AND epoch = p_epoch
    RETURNING log_start_offset INTO v_start;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kcoord: partition %-% is not led at epoch %', p_topic, p_partition, p_epoch
            USING ERRCODE = '{FENCED_SQLSTATE}', HINT = 'another node leads the partition';
    END IF;
    DELETE FROM kcoord_partition_batch
     WHERE topic = p_topic AND partition = p_partition AND last_offset < v_start;
    DELETE FROM kcoord_partition_aborted
     WHERE topic = p_topic AND partition = p_partition AND last_offset < v_start;
    RETURN v_start;
END
$fn$;
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "cluster, nodes, shard leases, records, kcoord_append", _TABLES + _APPEND),
    Migration(2, "cluster-wide metadata, producer id blocks, node endpoints", _METADATA),
    Migration(
        3, "partition leases, batches, producers, aborted transactions", _PARTITIONS + _PARTITION_APPEND
    ),
    Migration(4, "kcoord_flush: a node's writes in one fenced call; batches stored uncompressed", FLUSH),
    Migration(5, "share_state: share-partition state fenced by the partition leader's lease", SHARE_STATE),
    Migration(6, "partition_tail: leader epoch rows; kcoord_flush on generic plans", TAIL),
    Migration(7, "group_configs: a group's own configs are cluster-wide records", GROUP_CONFIGS),
    Migration(
        8,
        "share_delete_fence: a deleted share partition fences its leader's older writes",
        SHARE_DELETE_FENCE,
    ),
    Migration(9, "metadata_expect: a metadata write based on a stale row is refused", METADATA_EXPECT),
)
