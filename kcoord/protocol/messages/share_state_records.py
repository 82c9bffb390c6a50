"""The share coordinator's records (KIP-932), as Kafka 4.3 writes them to `__share_group_state`
(apache/kafka share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json;
checked against the 4.3.1 jar's copies).

Each key starts with its INT16 version, which is Kafka's record type: 0 ShareSnapshot (the whole state of
one share partition), 1 ShareUpdate (the batches changed since that snapshot). Values are version 0,
flexible; DeliveryCompleteCount (KIP-1226, 4.2) is tagged. kcoord stores them under storage record type
0x50 + Kafka's record type (`records.RECORD_TYPES`); a ShareSnapshot key with a null value is the
share partition's tombstone.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, INT64, STRING, UUID

__all__ = [
    "SHARE_SNAPSHOT_KEY",
    "SHARE_SNAPSHOT_RECORD_TYPE",
    "SHARE_SNAPSHOT_VALUE",
    "SHARE_UPDATE_KEY",
    "SHARE_UPDATE_RECORD_TYPE",
    "SHARE_UPDATE_VALUE",
]

SHARE_SNAPSHOT_RECORD_TYPE = 0x50 + 0
SHARE_UPDATE_RECORD_TYPE = 0x50 + 1

_KEY_FIELDS = (Field("group_id", STRING), Field("topic_id", UUID), Field("partition", INT32))
SHARE_SNAPSHOT_KEY = Schema("ShareSnapshotKey", versions=range(0, 1), fields=_KEY_FIELDS)
SHARE_UPDATE_KEY = Schema("ShareUpdateKey", versions=range(1, 2), fields=_KEY_FIELDS)

STATE_BATCH = Schema(
    "StateBatch",
    fields=(
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("delivery_state", INT8),  # 0 Available, 2 Acked, 4 Archived
        Field("delivery_count", INT16),
    ),
)

SHARE_SNAPSHOT_VALUE = Schema(
    "ShareSnapshotValue",
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("snapshot_epoch", INT32),
        Field("state_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, default=-1, tag=0, tagged_since=0),
        Field("create_timestamp", INT64),
        Field("write_timestamp", INT64),
        Field("state_batches", array(STATE_BATCH)),
    ),
)

SHARE_UPDATE_VALUE = Schema(
    "ShareUpdateValue",
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("snapshot_epoch", INT32),
        Field("leader_epoch", INT32),
        Field("start_offset", INT64),
        Field("delivery_complete_count", INT32, default=-1, tag=0, tagged_since=0),
        Field("state_batches", array(STATE_BATCH)),
    ),
)
