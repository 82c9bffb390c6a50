"""Migration `share_state` (issue 34 item 3, the cluster half): share-partition state in PostgreSQL,
fenced by the partition leader's lease epoch.

Kafka keeps a share partition's state in `__share_group_state` on the share coordinator, keyed
`group:topicId:partition` (ShareCoordinatorShard); here it follows the partition's leader instead: the
leader's SharePartitions tenant writes the ShareSnapshot / ShareUpdate records (the bytes of
`kcoord/coordinator/persistence/share_state_codec.py`) of its partitions through `kcoord_share_put`,
which locks each partition's lease row at the caller's epoch (FOR NO KEY UPDATE, in key order, the lock
`kcoord_flush` takes, so a taker's epoch bump waits for the call or the call re-checks against the
bump) and writes only the partitions still held at their epochs, naming the others in `fenced`. A
partition's rows are one snapshot and one cumulative update per group (the newest of each kind: the
table is compacted by key as the coordinator log is), so a new leader reads at most two rows per share
partition (docs/cluster.md, "Share groups").

A leader's write is also fenced by the share partition's state epoch, as ShareCoordinatorShard.
maybeGetWriteStateError refuses a write whose state epoch is older than the stored one
(FENCED_STATE_EPOCH, which SharePartitionManager answers NOT_LEADER_OR_FOLLOWER and reloads): the group's
coordinator resets a share partition another node leads (AlterShareGroupOffsets: InitializeShareGroupState
in Kafka) with `kcoord_share_set`, a snapshot at a higher state epoch, or deletes its state
(DeleteShareGroupOffsets / DeleteGroups: DeleteShareGroupState), and notifies the leader
(`kcoord_share` channel, payload `topic/partition`), which reloads the partition.
"""

from __future__ import annotations

__all__ = ["SHARE_CHANNEL", "SHARE_STATE"]

SHARE_CHANNEL = "kcoord_share"
"""NOTIFY payload `partition/topic` after the group's coordinator changed a share partition's state."""

SHARE_STATE = """
CREATE TABLE kcoord_share_state (
    topic     text     NOT NULL,
    partition integer  NOT NULL,
    group_id  text     NOT NULL,
    kind      smallint NOT NULL,   -- the storage record type: 0x50 ShareSnapshot, 0x51 ShareUpdate
    topic_id  uuid     NOT NULL,   -- a topic created again under the name has another id: not loaded
    key       bytea    NOT NULL,
    value     bytea    NOT NULL,
    state_epoch integer NOT NULL,  -- a snapshot's; an update's: the snapshot's it lays over
    PRIMARY KEY (topic, partition, group_id, kind)
);
CREATE INDEX kcoord_share_state_group ON kcoord_share_state (group_id);

-- One call per flush of a node's share-state writes. p_*: the partitions (1-based position = ord),
-- r_*: the records, each with the ord of its partition; a NULL value deletes the row (a tombstone).
-- The caller sends at most one record per (partition, group, kind): the newest.
CREATE FUNCTION kcoord_share_put(
    p_topic text[], p_partition integer[], p_epoch bigint[],
    r_ord integer[], r_group text[], r_kind smallint[], r_topic_id uuid[], r_key bytea[], r_value bytea[],
    r_state_epoch integer[], OUT fenced integer[]
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

-- The group's coordinator on a share partition it may not lead (reset or delete, the group empty):
-- p_value NULL deletes the group's state of the partition; else p_value is a snapshot that replaces it
-- when its state epoch is higher than the stored one (false: refused, FENCED_STATE_EPOCH). The leader is
-- told to reload.
CREATE FUNCTION kcoord_share_set(
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
    END IF;
    PERFORM pg_notify('kcoord_share', p_partition || '/' || p_topic);
    RETURN true;
END
$fn$;
"""
