"""Migration 6's SQL (issue 35 items 1 and 2, "partition_tail"; migration 5 is share_state):
what lets a new partition leader load a bounded tail, and `kcoord_flush` without re-planning.

* `kcoord_partition_epoch(topic, partition, epoch, start_offset)`: the partition's leader epoch history
  (Kafka's leader-epoch-checkpoint file, `LeaderEpochFileCache`), one row per epoch that stored a batch,
  its start the first such batch's base offset: what `EpochHistory.from_batches` read from every batch
  header before, so a leader no longer needs every batch to rebuild it. Back-filled from the stored
  batches (the partitionLeaderEpoch field, bytes 12-15 of a batch).
* `kcoord_flush` again (CREATE OR REPLACE, derived from migration 4's text, which never changes): it also
  writes that row, and runs on generic plans. Profiled (perf, the calling backend): a fifth of its CPU
  was the planner: PostgreSQL re-planned every statement of the function for every call, because its
  parameters are arrays whose contents change (plan cache "custom plans"), and the plans never differ.
"""

from __future__ import annotations

from kcoord.cluster.migration_flush import FLUSH

__all__ = ["BACKFILL", "TAIL"]


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AssertionError(f"migration 4's text changed: {old!r}")
    return text.replace(old, new)


_FUNCTION = FLUSH[FLUSH.index("CREATE FUNCTION kcoord_flush(") :]
_FUNCTION = _replace_once(
    _FUNCTION, "CREATE FUNCTION kcoord_flush(", "CREATE OR REPLACE FUNCTION kcoord_flush("
)
_FUNCTION = _replace_once(
    _FUNCTION,
    ") LANGUAGE plpgsql AS $fn$",
    ") LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$",
)
# The first call of an epoch that stores batches of a partition starts the epoch at its first batch
# (UnifiedLog.maybeAssignEpochStartOffset on append); later calls of the epoch change nothing.
_FUNCTION = _replace_once(
    _FUNCTION,
    "    INSERT INTO kcoord_partition_producer AS p\n",
    "    INSERT INTO kcoord_partition_epoch (topic, partition, epoch, start_offset)\n"
    "    SELECT p_topic[v.ord], p_partition[v.ord], p_epoch[v.ord], p_start[v.ord]\n"
    "      FROM unnest(v_parts) AS v(ord)\n"
    "    ON CONFLICT DO NOTHING;\n"
    "    INSERT INTO kcoord_partition_producer AS p\n",
)

BACKFILL = """
INSERT INTO kcoord_partition_epoch (topic, partition, epoch, start_offset)
SELECT topic, partition, epoch, min(base_offset) FROM (
    SELECT topic, partition, base_offset,
           ('x' || encode(substring(batch FROM 13 FOR 4), 'hex'))::bit(32)::integer AS epoch
      FROM kcoord_partition_batch) AS stored
 WHERE epoch >= 0
 GROUP BY topic, partition, epoch;
"""
"""The epoch rows of the batches stored before migration 6 (the first batch of each epoch)."""

TAIL = (
    """
CREATE TABLE kcoord_partition_epoch (
    topic text NOT NULL,
    partition integer NOT NULL,
    epoch bigint NOT NULL,
    start_offset bigint NOT NULL,
    PRIMARY KEY (topic, partition, epoch)
);
"""
    + BACKFILL
    + _FUNCTION
)
