"""Migration 4's SQL (issue 35 item 1): `kcoord_flush`, a node's shard and partition writes in one
fenced call (`kcoord/cluster/node_writer.py`), kept beside `migrations.py` so that module stays short.
A released migration never changes."""

from __future__ import annotations

__all__ = ["FLUSH"]

# Migration 4 (issue 35 item 1): every shard's and partition's writes of one node in one call per
# flush. The fence is kcoord_append's and kcoord_partition_append's, per shard and per partition, in
# one transaction: the held lease rows are locked (FOR NO KEY UPDATE, the lock an UPDATE of the row
# takes, so a taker's epoch bump waits for this transaction or this one re-checks against the bump,
# as in kcoord_append) and only their writes are made; a shard or partition not held at its epoch is
# reported in the OUT arrays and nothing of it is written, while the others commit. Rows are locked
# in key order (and `_RENEW` in leases.py locks in the same order), so two flushes or a flush and a
# renewal never wait for each other in a cycle. Any error rolls the whole call back.
# The partition arrays `b_`, `e_`, `a_` (batches, producer entries, aborted transactions) name their
# partition by its 1-based index into `p_`.
# Batches are stored as the producer sent them (compressed or not, its choice, as Kafka's log keeps
# them): EXTERNAL storage moves a large batch out of line without PostgreSQL's pglz compression,
# which spent database CPU on every produced byte for little gain on record data.
FLUSH = """
ALTER TABLE kcoord_partition_batch ALTER COLUMN batch SET STORAGE EXTERNAL;

CREATE FUNCTION kcoord_flush(
    s_shard integer[], s_epoch bigint[], s_last bigint[],
    r_shard integer[], r_type smallint[], r_key bytea[], r_value bytea[], r_lsn bigint[],
    p_topic text[], p_partition integer[], p_epoch bigint[], p_start bigint[], p_end bigint[],
    b_part integer[], b_base bigint[], b_last bigint[], b_max_ts bigint[], b_pid bigint[],
    b_pepoch smallint[], b_seq integer[], b_data bytea[],
    e_part integer[], e_pid bigint[], e_epoch smallint[], e_coord integer[], e_ts bigint[], e_txn bigint[],
    e_batches bytea[],
    a_part integer[], a_pid bigint[], a_first bigint[], a_last bigint[], a_lso bigint[],
    OUT fenced_shards integer[], OUT fenced_partitions integer[], OUT moved_partitions integer[]
) LANGUAGE plpgsql AS $fn$
DECLARE
    v_shards integer[];
    v_parts integer[];
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    fenced_shards := '{}';
    fenced_partitions := '{}';
    moved_partitions := '{}';
    -- A call without shards (or partitions) skips their statements: each costs an execution.
    IF cardinality(s_shard) > 0 THEN
        SELECT coalesce(array_agg(held.shard), '{}') INTO v_shards FROM (
            SELECT l.shard FROM kcoord_shard_lease AS l
              JOIN unnest(s_shard, s_epoch) AS s(shard, epoch) ON l.shard = s.shard AND l.epoch = s.epoch
             ORDER BY l.shard FOR NO KEY UPDATE OF l) AS held;
        fenced_shards := ARRAY(
            SELECT s.shard FROM unnest(s_shard) AS s(shard) WHERE s.shard <> ALL (v_shards));
        UPDATE kcoord_shard_lease AS l SET last_lsn = GREATEST(l.last_lsn, s.last)
          FROM unnest(s_shard, s_last) AS s(shard, last)
         WHERE l.shard = s.shard AND s.shard = ANY (v_shards);
        -- The newest entry of each key wins within the call (a later tombstone deletes).
        WITH batch AS (
            SELECT DISTINCT ON (b.shard, b.type, b.key) b.shard, b.type, b.key, b.value, b.lsn
              FROM unnest(r_shard, r_type, r_key, r_value, r_lsn) WITH ORDINALITY
                   AS b(shard, type, key, value, lsn, ord)
             WHERE b.shard = ANY (v_shards)
             ORDER BY b.shard, b.type, b.key, b.ord DESC
        ), deleted AS (
            DELETE FROM kcoord_record AS r USING batch
             WHERE batch.value IS NULL AND r.shard = batch.shard AND r.type = batch.type AND r.key = batch.key
        )
        INSERT INTO kcoord_record AS r (shard, type, key, value, lsn)
        SELECT batch.shard, batch.type, batch.key, batch.value, batch.lsn
          FROM batch WHERE batch.value IS NOT NULL
        ON CONFLICT (shard, type, key) DO UPDATE SET value = excluded.value, lsn = excluded.lsn;
    END IF;

    IF cardinality(p_topic) = 0 THEN
        RETURN;
    END IF;
    -- Partitions: held at the epoch AND ending where the batches start (no offset handed out twice).
    SELECT coalesce(array_agg(held.ord), '{}') INTO v_parts FROM (
        SELECT p.ord::integer AS ord FROM kcoord_partition_lease AS l
          JOIN unnest(p_topic, p_partition, p_epoch, p_start) WITH ORDINALITY
               AS p(topic, partition, epoch, start, ord)
            ON l.topic = p.topic AND l.partition = p.partition AND l.epoch = p.epoch
           AND l.log_end_offset = p.start
         ORDER BY l.topic, l.partition FOR NO KEY UPDATE OF l) AS held;
    SELECT coalesce(array_agg(p.ord::integer) FILTER (WHERE l.epoch IS DISTINCT FROM p.epoch), '{}'),
           coalesce(array_agg(p.ord::integer) FILTER (WHERE l.epoch = p.epoch), '{}')
      INTO fenced_partitions, moved_partitions
      FROM unnest(p_topic, p_partition, p_epoch) WITH ORDINALITY AS p(topic, partition, epoch, ord)
      LEFT JOIN kcoord_partition_lease AS l ON l.topic = p.topic AND l.partition = p.partition
     WHERE p.ord::integer <> ALL (v_parts);
    UPDATE kcoord_partition_lease AS l SET log_end_offset = p.last_end
      FROM unnest(p_topic, p_partition, p_end) WITH ORDINALITY AS p(topic, partition, last_end, ord)
     WHERE l.topic = p.topic AND l.partition = p.partition AND p.ord::integer = ANY (v_parts);
    INSERT INTO kcoord_partition_batch
        (topic, partition, base_offset, last_offset, max_timestamp, producer_id, producer_epoch,
         base_sequence, batch)
    SELECT p_topic[b.part], p_partition[b.part], b.base, b.last, b.max_ts, b.pid, b.pepoch, b.seq, b.data
      FROM unnest(b_part, b_base, b_last, b_max_ts, b_pid, b_pepoch, b_seq, b_data)
           AS b(part, base, last, max_ts, pid, pepoch, seq, data)
     WHERE b.part = ANY (v_parts);
    INSERT INTO kcoord_partition_producer AS p
        (topic, partition, producer_id, producer_epoch, coordinator_epoch, last_timestamp,
         txn_first_offset, batches)
    SELECT p_topic[e.part], p_partition[e.part], e.pid, e.epoch, e.coord, e.ts, e.txn, e.batches
      FROM unnest(e_part, e_pid, e_epoch, e_coord, e_ts, e_txn, e_batches)
           AS e(part, pid, epoch, coord, ts, txn, batches)
     WHERE e.part = ANY (v_parts)
    ON CONFLICT (topic, partition, producer_id) DO UPDATE
       SET producer_epoch = excluded.producer_epoch, coordinator_epoch = excluded.coordinator_epoch,
           last_timestamp = excluded.last_timestamp, txn_first_offset = excluded.txn_first_offset,
           batches = excluded.batches;
    INSERT INTO kcoord_partition_aborted
        (topic, partition, producer_id, first_offset, last_offset, last_stable_offset)
    SELECT p_topic[a.part], p_partition[a.part], a.pid, a.first, a.last, a.lso
      FROM unnest(a_part, a_pid, a_first, a_last, a_lso) AS a(part, pid, first, last, lso)
     WHERE a.part = ANY (v_parts);
END
$fn$;
"""
