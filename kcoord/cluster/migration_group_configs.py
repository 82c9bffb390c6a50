"""Migration 7's SQL ("group_configs", issue 34 in cluster mode): a group's own configs become
cluster-wide records.

Before it, a GroupConfigRecord (storage type 11) was a record of the group's shard (`kcoord_record`),
read only by the node coordinating the group; from it on, `shard_log.shard_key` sends it to
`kcoord_metadata`, which every node follows, as Kafka keeps a GROUP resource's configs as ConfigRecords
of the metadata log that every broker applies. The migration moves the rows the shards hold: each into
`kcoord_metadata` with a fresh sequence number (under the metadata writers' advisory lock, so sequence
order stays commit order for a follower), unless a row of that group is there already (written by a
node of this version: the newer one), then deletes them from the shards, so no shard load applies a
stale copy over the cluster-wide one.
"""

from __future__ import annotations

from kcoord.coordinator.persistence.group_config_codec import GROUP_CONFIG_RECORD_TYPE

__all__ = ["GROUP_CONFIGS", "METADATA_LOCK_KEY"]

# kcoord_metadata_put's advisory lock key (migrations._METADATA_LOCK_KEY, "kcoordm"): written out here
# because migrations.py imports this module (tests/cluster/test_group_configs_everywhere.py: equal)
METADATA_LOCK_KEY = 0x6B636F6F72646D

GROUP_CONFIGS = f"""
SELECT pg_advisory_xact_lock({METADATA_LOCK_KEY});
INSERT INTO kcoord_metadata AS m (type, key, value, seq)
SELECT r.type, r.key, r.value, nextval('kcoord_metadata_seq')
  FROM kcoord_record AS r
 WHERE r.type = {GROUP_CONFIG_RECORD_TYPE}
 ORDER BY r.lsn
ON CONFLICT (type, key) DO NOTHING;
DELETE FROM kcoord_record WHERE type = {GROUP_CONFIG_RECORD_TYPE};
"""
