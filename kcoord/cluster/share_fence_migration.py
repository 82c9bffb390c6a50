"""Migration `share_delete_fence` (issue 34 item 5): a deleted share partition's state still fences the
leader's writes made before its reload.

Migration 5 (kcoord/cluster/share_migration.py) fences a leader's `kcoord_share_put` by the share
partition's stored state epoch, so a reset by the group's coordinator (`kcoord_share_set` with a
snapshot at a higher state epoch) refuses the leader's older writes until it reloads. A delete
(DeleteShareGroupOffsets, DeleteGroups) left no row to compare with: a write the leader made from the
state before its reload (a lock expiry of a departed member's record, milliseconds after) was stored
and brought the deleted state back. Kafka's share coordinator refuses it: after DeleteShareGroupState
the share partition is unknown to it, and ShareCoordinatorShard.maybeGetWriteStateError answers a write
for it INVALID_REQUEST ("Write operation on uninitialized share partition not allowed.", 4.3.1 jar).

Here each delete leaves a marker, `kcoord_share_deleted`, one row per (topic, partition, group) with a
generation counted up by every delete. A leader reads the markers of a partition before its rows
(kcoord/cluster/share_state.py: read first, so a delete between the two reads makes the leader's
writes older, never newer) and sends, with each record, the generation it loaded; `kcoord_share_put`
refuses a partition whose record carries a generation older than the stored marker's, which the leader
answers NOT_LEADER_OR_FOLLOWER and reloads, as for a state epoch. A marker is one small row per share
partition ever deleted; a deleted topic's share rows go with the topic (kcoord/cluster/partitions.py),
its markers stay harmless (a topic created again starts at the generation it reads).
"""

from __future__ import annotations

__all__ = ["SHARE_DELETE_FENCE"]

SHARE_DELETE_FENCE = """
CREATE TABLE kcoord_share_deleted (
    topic      text    NOT NULL,
    partition  integer NOT NULL,
    group_id   text    NOT NULL,
    generation bigint  NOT NULL,   -- counted up by every delete of the share partition's state
    PRIMARY KEY (topic, partition, group_id)
);

DROP FUNCTION kcoord_share_put(text[], integer[], bigint[], integer[], text[], smallint[], uuid[], bytea[],
                               bytea[], integer[]);

-- As migration 5's, plus r_generation: the delete generation the leader loaded for the record's group
-- (0: none); a partition with a record older than its group's stored marker is refused whole.
CREATE FUNCTION kcoord_share_put(
    p_topic text[], p_partition integer[], p_epoch bigint[],
    r_ord integer[], r_group text[], r_kind smallint[], r_topic_id uuid[], r_key bytea[], r_value bytea[],
    r_state_epoch integer[], r_generation bigint[], OUT fenced integer[]
) LANGUAGE plpgsql AS $fn$
DECLARE
    v_held integer[];
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    SELECT coalesce(array_agg(held.ord), '{}') INTO v_held FROM (
        SELECT p.ord::integer AS ord FROM kcoord_partition_lease AS l
          JOIN unnest(p_topic, p_partition, p_epoch) WITH ORDINALITY AS p(topic, partition, epoch, ord)
            ON l.topic = p.topic AND l.partition = p.partition AND l.epoch = p.epoch
         ORDER BY l.topic, l.partition FOR NO KEY UPDATE OF l) AS held;
    -- a partition with a record older than the share partition's stored state epoch is refused whole
    v_held := ARRAY(SELECT h FROM unnest(v_held) AS h WHERE NOT EXISTS (
        SELECT 1 FROM unnest(r_ord, r_group, r_state_epoch) AS r(ord, g, e)
          JOIN kcoord_share_state AS s ON s.topic = p_topic[r.ord] AND s.partition = p_partition[r.ord]
           AND s.group_id = r.g AND s.kind = 80
         WHERE r.ord = h AND s.state_epoch > r.e));
    -- and so is one with a record made before a delete of its group's state the leader has not loaded
    v_held := ARRAY(SELECT h FROM unnest(v_held) AS h WHERE NOT EXISTS (
        SELECT 1 FROM unnest(r_ord, r_group, r_generation) AS r(ord, g, n)
          JOIN kcoord_share_deleted AS d ON d.topic = p_topic[r.ord] AND d.partition = p_partition[r.ord]
           AND d.group_id = r.g
         WHERE r.ord = h AND d.generation > r.n));
    fenced := ARRAY(SELECT o FROM generate_subscripts(p_topic, 1) AS o WHERE o <> ALL (v_held));
    DELETE FROM kcoord_share_state AS s
     USING unnest(r_ord, r_group, r_kind, r_value) AS r(ord, g, k, v)
     WHERE r.v IS NULL AND r.ord = ANY (v_held)
       AND s.topic = p_topic[r.ord] AND s.partition = p_partition[r.ord]
       AND s.group_id = r.g AND s.kind = r.k;
    INSERT INTO kcoord_share_state AS s (topic, partition, group_id, kind, topic_id, key, value, state_epoch)
    SELECT p_topic[r.ord], p_partition[r.ord], r.g, r.k, r.i, r.key, r.v, r.e
      FROM unnest(r_ord, r_group, r_kind, r_topic_id, r_key, r_value, r_state_epoch)
           AS r(ord, g, k, i, key, v, e)
     WHERE r.v IS NOT NULL AND r.ord = ANY (v_held)
    ON CONFLICT (topic, partition, group_id, kind)
    DO UPDATE SET topic_id = EXCLUDED.topic_id, key = EXCLUDED.key, value = EXCLUDED.value,
                  state_epoch = EXCLUDED.state_epoch;
END
$fn$;

-- As migration 5's, plus: a delete counts the share partition's marker up (the leader's writes from
-- before it are refused by kcoord_share_put until it reloads).
CREATE OR REPLACE FUNCTION kcoord_share_set(
    p_topic text, p_partition integer, p_group text, p_topic_id uuid, p_key bytea, p_value bytea,
    p_state_epoch integer
) RETURNS boolean LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- the lease row first, as every writer of the partition's rows locks it (no deadlock with a flush)
    PERFORM 1 FROM kcoord_partition_lease WHERE topic = p_topic AND partition = p_partition
        FOR NO KEY UPDATE;
    IF p_value IS NOT NULL AND EXISTS (
        SELECT 1 FROM kcoord_share_state WHERE topic = p_topic AND partition = p_partition
           AND group_id = p_group AND kind = 80 AND state_epoch >= p_state_epoch) THEN
        RETURN false;
    END IF;
    DELETE FROM kcoord_share_state WHERE topic = p_topic AND partition = p_partition AND group_id = p_group;
    IF p_value IS NOT NULL THEN
        INSERT INTO kcoord_share_state (topic, partition, group_id, kind, topic_id, key, value, state_epoch)
        VALUES (p_topic, p_partition, p_group, 80, p_topic_id, p_key, p_value, p_state_epoch);
    ELSE
        INSERT INTO kcoord_share_deleted AS d (topic, partition, group_id, generation)
        VALUES (p_topic, p_partition, p_group, 1)
        ON CONFLICT (topic, partition, group_id) DO UPDATE SET generation = d.generation + 1;
    END IF;
    PERFORM pg_notify('kcoord_share', p_partition || '/' || p_topic);
    RETURN true;
END
$fn$;
"""
