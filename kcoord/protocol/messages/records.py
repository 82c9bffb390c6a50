"""`__consumer_offsets` record keys and values (apache/kafka group-coordinator/src/main/resources/
common/message/{OffsetCommitKey,OffsetCommitValue,GroupMetadataKey,GroupMetadataValue}.json).

Every key and value is an INT16 version followed by the struct. The *key* version tells the record
type: 0 and 1 are an offset commit (identical layouts; Kafka writes 1), 2 is classic group metadata,
3+ are KIP-848 / share-group records we do not read. Value v4 is the flexible form of v3.
TopicKey / TopicValue are kcoord's own topic-registry record (storage record type 4, not a Kafka
record), kept here so every reader of the coordinator log decodes it with the same schema.
ProducerIdsKey / ProducerIdsValue are kcoord's producer-id block record (storage record type 5).
TransactionLogKey / TransactionLogValue are Kafka's `__transaction_state` records (storage type 6).
TxnOffsetCommitKey / TxnOffsetCommitValue are kcoord's pending transactional offset (storage type 7).
Writers: Kafka writes OffsetCommitValue v3 (v1 when the commit carried an explicit retention) and
GroupMetadataValue v3.

`RECORD_TYPES` is the one table of the coordinator log's record types: storage record type -> name,
key and value schemas and the versions written. Every writer and reader of the log (the
coordinator's record codec, `kcoord storage dump`, the Spark pipeline) takes its numbers from it.
"""

import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages import consumer_group_records as cg
from kcoord.protocol.messages import share_state_records as ss
from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BYTES, INT8, INT16, INT32, INT64, NULLABLE_STRING, STRING, UUID, ZERO_UUID

OFFSET_COMMIT_KEY = Schema(
    "OffsetCommitKey",
    versions=range(0, 2),
    fields=(
        Field("group", STRING),
        Field("topic", STRING),
        Field("partition", INT32),
    ),
)

OFFSET_COMMIT_VALUE = Schema(
    "OffsetCommitValue",
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("offset", INT64),
        Field("leader_epoch", INT32, since=3, default=-1),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, since=1, until=1, default=-1),
        # Kafka 4.3's OffsetCommitValue.json: the committed topic's id, tagged (omitted when zero)
        Field("topic_id", UUID, since=4, default=ZERO_UUID, tag=0, tagged_since=4),
    ),
)

GROUP_METADATA_KEY = Schema(
    "GroupMetadataKey",
    versions=range(2, 3),
    fields=(Field("group", STRING),),
)

MEMBER_METADATA = Schema(
    "MemberMetadata",
    fields=(
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=3, default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        # v0 has no rebalance timeout: readers use the session timeout instead.
        Field("rebalance_timeout", INT32, since=1, default=-1),
        Field("session_timeout", INT32),
        Field("subscription", BYTES),  # the member's metadata for the selected protocol only
        Field("assignment", BYTES),
    ),
)

GROUP_METADATA_VALUE = Schema(
    "GroupMetadataValue",
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("protocol_type", STRING),
        Field("generation", INT32),
        Field("protocol", NULLABLE_STRING),
        Field("leader", NULLABLE_STRING),
        Field("current_state_timestamp", INT64, since=2, default=-1),
        Field("members", array(MEMBER_METADATA)),
    ),
)

# kcoord's topic registry record (storage record type 4): the topic exists with num_partitions
# partitions 0..n-1; a None value (tombstone) = the topic was deleted.
# Value v1 adds the topic's own configs (set by CreateTopics / AlterConfigs; defaults are not stored).
# Writers use v0 for a topic without configs, so such a directory stays readable by older readers.
TOPIC_RECORD_TYPE = 4
TOPIC_KEY = Schema("TopicKey", versions=range(0, 1), fields=(Field("name", STRING),))
TOPIC_CONFIG = Schema("TopicConfig", fields=(Field("name", STRING), Field("value", STRING)))
TOPIC_VALUE = Schema(
    "TopicValue",
    versions=range(0, 2),
    fields=(
        Field("topic_id", UUID),
        Field("num_partitions", INT32),
        Field("configs", array(TOPIC_CONFIG), since=1, default=()),
    ),
)
TOPIC_VERSION = 0
TOPIC_CONFIGS_VERSION = 1

# kcoord's producer-id block record (storage record type 5): ids below block_end may have been
# handed out (kcoord/coordinator/metadata/producer_ids.py). The key has no fields: there is one such record.
PRODUCER_IDS_RECORD_TYPE = 5
PRODUCER_IDS_KEY = Schema("ProducerIdsKey", versions=range(0, 1), fields=())
PRODUCER_IDS_VALUE = Schema("ProducerIdsValue", versions=range(0, 1), fields=(Field("block_end", INT64),))

# Kafka's `__transaction_state` record (storage record type 6): apache/kafka transaction-coordinator/
# src/main/resources/common/message/TransactionLog{Key,Value}.json. Value v1 is the first flexible
# version; Kafka writes v0 until transaction.version 1 is finalized (TransactionVersion.
# transactionLogValueVersion). The partitions are null in the Empty state (TransactionLog.valueToBytes).
TRANSACTION_RECORD_TYPE = 6
TRANSACTION_LOG_KEY = Schema(
    "TransactionLogKey", versions=range(0, 1), fields=(Field("transactional_id", STRING),)
)
TRANSACTION_PARTITIONS = Schema(
    "PartitionsSchema", fields=(Field("topic", STRING), Field("partition_ids", array(INT32)))
)
TRANSACTION_LOG_VALUE = Schema(
    "TransactionLogValue",
    versions=range(0, 2),
    flexible_since=1,
    fields=(
        Field("producer_id", INT64),
        Field("previous_producer_id", INT64, since=1, default=-1, tag=0, tagged_since=1),
        Field("next_producer_id", INT64, since=1, default=-1, tag=1, tagged_since=1),
        Field("producer_epoch", INT16),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_status", INT8),
        Field("transaction_partitions", array(TRANSACTION_PARTITIONS), nullable_since=0, default=None),
        Field("transaction_last_update_timestamp_ms", INT64),
        Field("transaction_start_timestamp_ms", INT64),
        Field("client_transaction_version", INT16, since=1, default=0, tag=2, tagged_since=1),
    ),
)
TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 1  # what kcoord writes (the tagged fields carry V2's producer ids)
# kcoord's pending transactional offset (storage record type 7; type 8 stays reserved for the
# transactional offsets and is unused). Kafka writes a TxnOffsetCommit as an OffsetCommitKey/Value in a
# transactional batch of __consumer_offsets and resolves it with the partition's COMMIT/ABORT control
# record (OffsetMetadataManager.replay / replayEndTransactionMarker). The coordinator log is compacted by
# (type, key) and knows no transactions, so a pending offset has its own key, one per producer and
# partition, and is tombstoned at the marker, whose batch also writes the offsets it commits as plain
# type-0 records (kcoord/coordinator/groups/txn_offsets.py).
TXN_OFFSET_COMMIT_RECORD_TYPE = 7
TXN_OFFSET_COMMIT_KEY = Schema(
    "TxnOffsetCommitKey",
    versions=range(0, 1),
    fields=(
        Field("producer_id", INT64),
        Field("group", STRING),
        Field("topic", STRING),
        Field("partition", INT32),
    ),
)
TXN_OFFSET_COMMIT_VALUE = Schema(
    "TxnOffsetCommitValue",
    versions=range(0, 1),
    fields=(
        Field("producer_epoch", INT16),
        Field("offset", INT64),
        Field("leader_epoch", INT32),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
    ),
)

OFFSET_COMMIT_KEY_VERSION = 1  # what Kafka writes
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

KEY_SCHEMAS: dict[int, Schema] = {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY, 2: GROUP_METADATA_KEY}
# key schema -> the value schema stored under it
VALUE_SCHEMAS: dict[str, Schema] = {
    OFFSET_COMMIT_KEY.name: OFFSET_COMMIT_VALUE,
    GROUP_METADATA_KEY.name: GROUP_METADATA_VALUE,
}

# An ACL binding (storage record type 10, issue 25): kcoord's own record, one per binding, keyed by the
# whole binding (Kafka's AccessControlEntryRecord keys by a random id; the binding is its identity here,
# so a DeleteAcls tombstone needs no id table). The value holds only its version; a tombstone removes.
ACL_RECORD_TYPE = 10
ACL_KEY = Schema(
    "AclKey",
    versions=range(0, 1),
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)
ACL_VALUE = Schema("AclValue", versions=range(0, 1), fields=())

OFFSET_COMMIT_RECORD_TYPE = 0
GROUP_METADATA_RECORD_TYPE = 1
CONSUMER_GROUP_METADATA_RECORD_TYPE = 0x40 + 3
CONSUMER_GROUP_MEMBER_METADATA_RECORD_TYPE = 0x40 + 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE = 0x40 + 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE = 0x40 + 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE = 0x40 + 8


class RecordType(NamedTuple):
    """One kind of record in the coordinator log."""

    type: int  # the storage record type (storage.Record.type; 0-0x7F belong to the coordinator)
    name: str
    key: Schema
    value: Schema  # a None value is a tombstone
    key_version: int  # the versions written (readers take every version of the schemas)
    value_version: int


RECORD_TYPES: dict[int, RecordType] = {
    r.type: r
    for r in (
        RecordType(OFFSET_COMMIT_RECORD_TYPE, "offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE,
                   OFFSET_COMMIT_KEY_VERSION, OFFSET_COMMIT_VALUE_VERSION),
        RecordType(GROUP_METADATA_RECORD_TYPE, "group_metadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE,
                   GROUP_METADATA_KEY_VERSION, GROUP_METADATA_VALUE_VERSION),
        # 2 and 3 are unused; Kafka's own key versions 3+ (KIP-848) are not stored under 0 or 1.
        RecordType(TOPIC_RECORD_TYPE, "topic", TOPIC_KEY, TOPIC_VALUE, TOPIC_VERSION, TOPIC_VERSION),
        RecordType(PRODUCER_IDS_RECORD_TYPE, "producer_ids", PRODUCER_IDS_KEY, PRODUCER_IDS_VALUE, 0, 0),
        RecordType(TRANSACTION_RECORD_TYPE, "transaction", TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE,
                   TRANSACTION_LOG_KEY_VERSION, TRANSACTION_LOG_VALUE_VERSION),
        RecordType(TXN_OFFSET_COMMIT_RECORD_TYPE, "txn_offset_commit", TXN_OFFSET_COMMIT_KEY,
                   TXN_OFFSET_COMMIT_VALUE, 0, 0),
        RecordType(ACL_RECORD_TYPE, "acl", ACL_KEY, ACL_VALUE, 0, 0),
        # The consumer protocol's records (KIP-848): 0x40 + Kafka's key type (consumer_group_records.py).
        RecordType(CONSUMER_GROUP_METADATA_RECORD_TYPE, "consumer_group_metadata",
                   cg.CONSUMER_GROUP_METADATA_KEY, cg.CONSUMER_GROUP_METADATA_VALUE, 3, 0),
        RecordType(CONSUMER_GROUP_MEMBER_METADATA_RECORD_TYPE, "consumer_group_member_metadata",
                   cg.CONSUMER_GROUP_MEMBER_METADATA_KEY, cg.CONSUMER_GROUP_MEMBER_METADATA_VALUE, 5, 0),
        RecordType(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE,
                   "consumer_group_target_assignment_metadata",
                   cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                   cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, 6, 0),
        RecordType(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE,
                   "consumer_group_target_assignment_member",
                   cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                   cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, 7, 0),
        RecordType(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE,
                   "consumer_group_current_member_assignment",
                   cg.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                   cg.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, 8, 0),
        # The share coordinator's records (KIP-932): 0x50 + Kafka's record type (share_state_records.py).
        RecordType(ss.SHARE_SNAPSHOT_RECORD_TYPE, "share_snapshot", ss.SHARE_SNAPSHOT_KEY,
                   ss.SHARE_SNAPSHOT_VALUE, 0, 0),
        RecordType(ss.SHARE_UPDATE_RECORD_TYPE, "share_update", ss.SHARE_UPDATE_KEY,
                   ss.SHARE_UPDATE_VALUE, 1, 0),
    )
}  # fmt: skip

_VERSION = struct.Struct(">h")


def encode_versioned(schema: Schema, version: int, message: Mapping[str, Any]) -> bytes:
    """INT16 version + struct: the layout of every `__consumer_offsets` key and value."""
    return _VERSION.pack(version) + codec_for(schema, version).build(message)


def decode_key(data: bytes) -> tuple[Schema | None, dict[str, Any]]:
    """Return (key schema, fields); (None, {}) for key versions we do not read (KIP-848 and later)."""
    version = _read_version(data, "key")
    schema = KEY_SCHEMAS.get(version)
    if schema is None:
        return None, {}
    return schema, dict(codec_for(schema, version).parse(bytes(data[_VERSION.size :])))


def decode_value(schema: Schema, data: bytes) -> tuple[int, dict[str, Any]]:
    """Return (value version, fields) of a value stored under a key of the given schema's type."""
    version = _read_version(data, "value")
    if schema.versions is None or version not in schema.versions:
        raise DecodeError(None, version, "version", f"{schema.name}: unknown version {version}")
    return version, dict(codec_for(schema, version).parse(bytes(data[_VERSION.size :])))


def decode_exact(schema: Schema, data: bytes) -> dict[str, Any]:
    """A key or value of `schema`, refusing an unknown version; the codec refuses trailing bytes."""
    version = _read_version(data, schema.name)
    if schema.versions is None or version not in schema.versions:
        raise DecodeError(None, version, "version", f"{schema.name}: unknown version {version}")
    return dict(codec_for(schema, version).parse(bytes(data[_VERSION.size :])))


def _read_version(data: bytes, what: str) -> int:
    if len(data) < _VERSION.size:
        raise DecodeError(None, None, "version", f"record {what} of {len(data)} bytes has no version")
    (version,) = _VERSION.unpack_from(data)
    return int(version)


# -- the hot record, by struct ----------------------------------------------------------------------
# Offset commits are most of any coordinator log: every replay and every pipeline read decodes them,
# so OffsetCommitKey v0/v1 and OffsetCommitValue v3 (what kcoord and Kafka write) have a struct
# decoder next to their schemas; anything else (or anything malformed) falls back to the schemas,
# which say precisely what is wrong. tests/server/test_persistence.py pins it to the schemas.
_KEY_HEAD = struct.Struct(">hh")  # version, group length
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader_epoch, metadata length
_I64 = struct.Struct(">q")


class FastOffsetCommit(NamedTuple):
    group: str
    topic: str
    partition: int
    offset: int  # -1 with `tombstone`
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    tombstone: bool


def decode_offset_commit_fast(key: bytes, value: bytes | None) -> FastOffsetCommit | None:
    """An offset commit (key v0/v1, value v3 or a tombstone) by struct; None = use the schemas."""
    try:
        version, group_len = _KEY_HEAD.unpack_from(key)
        if version not in (0, 1) or group_len < 0:
            return None
        pos = _KEY_HEAD.size + group_len
        group = key[_KEY_HEAD.size : pos].decode()
        (topic_len,) = _I16.unpack_from(key, pos)
        pos += _I16.size
        topic = key[pos : pos + topic_len].decode()
        (partition,) = _I32.unpack_from(key, pos + topic_len)
        if topic_len < 0 or pos + topic_len + _I32.size != len(key):
            return None
        if value is None:
            return FastOffsetCommit(group, topic, partition, -1, -1, "", -1, True)
        if len(value) < _V3_HEAD.size or _I16.unpack_from(value)[0] != 3:
            return None
        _, offset, leader_epoch, meta_len = _V3_HEAD.unpack_from(value)
        end = _V3_HEAD.size + meta_len
        if meta_len < 0 or end + _I64.size != len(value):
            return None
        metadata = value[_V3_HEAD.size : end].decode()
        (commit_timestamp,) = _I64.unpack_from(value, end)
    except (struct.error, UnicodeDecodeError):
        return None
    return FastOffsetCommit(group, topic, partition, offset, leader_epoch, metadata, commit_timestamp, False)
