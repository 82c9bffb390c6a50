"""The coordinator log's group records as Kafka writes them to `__consumer_offsets` (issue 33 item 5).

Pure: storage records in, Kafka's record keys and values and its record batches out. The coordinator
log already stores most group records in Kafka's own layout (`protocol.messages.records`,
`consumer_group_records`): OffsetCommitKey v1 / OffsetCommitValue v3 (v1 with an expire timestamp),
GroupMetadataKey v2 / GroupMetadataValue v3, and the consumer protocol's keys 3, 5-8 and the share
groups' keys 10-15 (KIP-932) with their value v0 (Kafka 4.1+ writes no ConsumerGroupPartitionMetadata,
key 4: the metadata hash replaced it).
Those are passed through byte for byte, but for the offset's value: Kafka 4.3 writes OffsetCommitValue
v4 (flexible, the topic's id as tagged field 0) unless the commit has an expire timestamp (then v1:
`GroupCoordinatorRecordHelpers.offsetCommitValueVersion`), so a stored v3 is served as v4 with the id
the topic has when the view reads it (`topic_ids`). The one record kcoord stores differently is the
pending transactional offset (storage type 7, keyed by producer): Kafka writes it as an OffsetCommit
key v1 / value v4 without a topic id (`OffsetAndMetadata.fromRequest` of a TxnOffsetCommit partition
sets ZERO_UUID) in a transactional batch of the producer (`OffsetMetadataManager.commitTransactionalOffset`)
and ends it with the partition's COMMIT/ABORT control record (`replayEndTransactionMarker`), so it is
rebuilt here in that form. Deletions are tombstones (a null value), as Kafka's
`GroupCoordinatorRecordHelpers.newOffsetCommitTombstoneRecord` / `newGroupMetadataTombstoneRecord`.

Which partition a record goes to is Kafka's `GroupCoordinatorService.partitionFor` (`runtime.shards`).
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kcoord import storage
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import decode_exact, encode_versioned
from kcoord.protocol.record_batch import (
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    ControlRecordType,
    write_batch,
    write_varint,
)
from kcoord.protocol.types import ZERO_UUID

__all__ = [
    "OFFSETS_TOPIC",
    "MarkerRecord",
    "OffsetsRecord",
    "TopicEntry",
    "TopicIds",
    "as_written",
    "encode_batch",
    "encode_empty_batch",
    "is_group_record",
    "marker_key",
    "marker_value",
    "offsets_records",
]

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's Topic.GROUP_METADATA_TOPIC_NAME

# Storage record types whose key starts (after its INT16 version) with the group id, stored as Kafka
# writes them.
_PASSED_THROUGH = frozenset(
    {
        schemas.OFFSET_COMMIT_RECORD_TYPE,
        schemas.GROUP_METADATA_RECORD_TYPE,
        schemas.CONSUMER_GROUP_METADATA_RECORD_TYPE,
        schemas.CONSUMER_GROUP_MEMBER_METADATA_RECORD_TYPE,
        schemas.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE,
        schemas.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE,
        schemas.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE,
        # share groups (KIP-932): Kafka's keys 10-15, stored as Kafka writes them
        schemas.SHARE_GROUP_MEMBER_METADATA_RECORD_TYPE,
        schemas.SHARE_GROUP_METADATA_RECORD_TYPE,
        schemas.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE,
        schemas.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE,
        schemas.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE,
        schemas.SHARE_GROUP_STATE_PARTITION_METADATA_RECORD_TYPE,
    }
)
_KEY_HEAD = struct.Struct(">hh")  # version, group id length (every group key's first field)
_CONTROL_KEY = struct.Struct(">hh")  # ControlRecordType key: version 0, type
_MARKER_VALUE = struct.Struct(">hi")  # EndTransactionMarker value: version 0, coordinator epoch
_TXN_ROW = schemas.RECORD_TYPES[schemas.TXN_OFFSET_COMMIT_RECORD_TYPE]
_STORED_VALUE = struct.pack(">h", schemas.OFFSET_COMMIT_VALUE_VERSION)  # the coordinator log's offsets
WRITTEN_VALUE_VERSION = 4  # Kafka 4.3's `GroupCoordinatorRecordHelpers.offsetCommitValueVersion(false)`

# A topic's id by name, None for a topic that does not exist (any more): Kafka fills the commit's topic
# id from its metadata when the request names the topic (KafkaApis), ZERO_UUID when it knows none.
TopicIds = Callable[[str], uuid.UUID | None]


def _no_topic_ids(_name: str) -> uuid.UUID | None:
    return None


class OffsetsRecord(NamedTuple):
    """One record of `__consumer_offsets`: Kafka's key and value (None = tombstone), in the batch of
    `producer_id` (transactional) or in a plain batch (-1)."""

    partition: int
    key: bytes
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1


class MarkerRecord(NamedTuple):
    """The end of a producer's transactional offsets on a partition: COMMIT or ABORT."""

    partition: int
    producer_id: int
    commit: bool


def offsets_records(
    records: Sequence[storage.Record],
    num_partitions: int,
    *,
    live: bool,
    topic_ids: TopicIds = _no_topic_ids,
) -> list[OffsetsRecord | MarkerRecord | None]:
    """The `__consumer_offsets` form of each record of one coordinator-log write (None: not a group
    record). `live`: the write as it happens, where a pending transactional offset's tombstone is its
    transaction's marker; replayed from the compacted log (`live=False`) a finished transaction's
    tombstones say nothing the offsets do not (Kafka's cleaner drops such markers too)."""
    committed = any(r.type == schemas.OFFSET_COMMIT_RECORD_TYPE and r.value is not None for r in records)
    out: list[OffsetsRecord | MarkerRecord | None] = []
    seen_markers: set[tuple[int, int]] = set()
    for record in records:
        if record.type in _PASSED_THROUGH:
            value = record.value
            if record.type == schemas.OFFSET_COMMIT_RECORD_TYPE and value is not None:
                value = as_written(value, topic_ids(_topic_of(record.key)))
            out.append(OffsetsRecord(_partition(_group_of(record.key), num_partitions), record.key, value))
        elif record.type == schemas.TXN_OFFSET_COMMIT_RECORD_TYPE:
            out.append(_transactional(record, num_partitions, live, committed, seen_markers))
        else:
            out.append(None)
    return out


def as_written(value: bytes, topic_id: uuid.UUID | None) -> bytes:
    """A stored OffsetCommitValue as Kafka 4.3 writes it: v3 becomes v4 with `topic_id` (None, the
    topic unknown: the tagged field is left out, as Kafka leaves out a zero id); v1 (an expire
    timestamp) and anything else as it is."""
    if not value.startswith(_STORED_VALUE):
        return value
    fields = decode_exact(schemas.OFFSET_COMMIT_VALUE, value)
    fields["topic_id"] = topic_id or ZERO_UUID
    return encode_versioned(schemas.OFFSET_COMMIT_VALUE, WRITTEN_VALUE_VERSION, fields)


def _topic_of(key: bytes) -> str:
    return str(decode_exact(schemas.OFFSET_COMMIT_KEY, key)["topic"])


def is_group_record(record: storage.Record) -> bool:
    """A record `__consumer_offsets` shows (a group's, an offset's, a pending transactional offset)."""
    return record.type in _PASSED_THROUGH or record.type == schemas.TXN_OFFSET_COMMIT_RECORD_TYPE


@functools.lru_cache(maxsize=1 << 16)
def _partition(group: str, num_partitions: int) -> int:
    """`shard_of`, remembered: a group's every commit asks again, and Java's hash is a loop in Python."""
    return shard_of(group, num_partitions)


def _group_of(key: bytes) -> str:
    _, length = _KEY_HEAD.unpack_from(key)
    return key[_KEY_HEAD.size : _KEY_HEAD.size + length].decode()


def _transactional(
    record: storage.Record,
    num_partitions: int,
    live: bool,
    committed: bool,
    seen: set[tuple[int, int]],
) -> OffsetsRecord | MarkerRecord | None:
    """A pending transactional offset as Kafka writes it, or its tombstone as the marker (one per
    producer and partition per write). A marker write holds the offsets a COMMIT applies as plain
    OffsetCommit records (kcoord/coordinator/groups/txn_offsets.py `marker_records`), none for ABORT."""
    k = decode_exact(_TXN_ROW.key, record.key)
    partition = _partition(k["group"], num_partitions)
    if record.value is None:
        if not live or (partition, k["producer_id"]) in seen:
            return None
        seen.add((partition, k["producer_id"]))
        return MarkerRecord(partition, k["producer_id"], committed)
    v = decode_exact(_TXN_ROW.value, record.value)
    key = encode_versioned(
        schemas.OFFSET_COMMIT_KEY,
        schemas.OFFSET_COMMIT_KEY_VERSION,
        {"group": k["group"], "topic": k["topic"], "partition": k["partition"]},
    )
    value = encode_versioned(
        schemas.OFFSET_COMMIT_VALUE,
        WRITTEN_VALUE_VERSION,  # without a topic id: a TxnOffsetCommit names none
        {
            "offset": v["offset"],
            "leader_epoch": v["leader_epoch"],
            "metadata": v["metadata"],
            "commit_timestamp": v["commit_timestamp"],
        },
    )
    return OffsetsRecord(partition, key, value, k["producer_id"], v["producer_epoch"])


def marker_key(commit: bool) -> bytes:
    """The control record key of an end-transaction marker (Kafka's `ControlRecordType.recordKey`)."""
    return _CONTROL_KEY.pack(0, ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)


def marker_value(coordinator_epoch: int = 0) -> bytes:
    return _MARKER_VALUE.pack(0, coordinator_epoch)


class TopicEntry(NamedTuple):
    """A record placed in a partition of the view: its offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1
    control: bool = False


def encode_batch(entries: Sequence[TopicEntry]) -> bytes:
    """One uncompressed magic-2 batch of `entries` (one kind: plain, one producer's transactional
    records, or one control record). Offsets may be sparse inside it, as in a batch Kafka's cleaner
    rewrote (`DefaultRecordBatch`: records keep their offset delta, lastOffsetDelta the last one)."""
    first = entries[0]
    base, base_ts = first.offset, first.timestamp
    body = b"".join(_record(e.offset - base, e.timestamp - base_ts, e.key, e.value) for e in entries)
    attributes = (TRANSACTIONAL_BIT if first.producer_id >= 0 else 0) | (CONTROL_BIT if first.control else 0)
    header = BatchHeader(
        base, 0, -1, 2, 0, attributes, entries[-1].offset - base, base_ts,
        max(e.timestamp for e in entries), first.producer_id, first.producer_epoch, -1, len(entries),
    )  # fmt: skip
    return write_batch(header, body)


def encode_empty_batch(base_offset: int, last_offset: int, timestamp: int) -> bytes:
    """A batch of no records covering [base_offset, last_offset]: what Kafka's cleaner leaves where it
    removed every record of a batch (v2 keeps a batch's last offset, so a reader's next fetch offset
    moves past it: kafka-python's `CompletedFetch`, the Java client's `nextFetchOffset`)."""
    header = BatchHeader(
        base_offset, 0, -1, 2, 0, 0, last_offset - base_offset, timestamp, timestamp, -1, -1, -1, 0
    )
    return write_batch(header, b"")


def _record(offset_delta: int, timestamp_delta: int, key: bytes, value: bytes | None) -> bytes:
    """A `DefaultRecord`: attributes, deltas, key, value (-1 = null), no headers."""
    value_part = write_varint(-1) if value is None else write_varint(len(value)) + value
    body = b"".join(
        (
            b"\x00",
            write_varint(timestamp_delta),
            write_varint(offset_delta),
            write_varint(len(key)),
            key,
            value_part,
            write_varint(0),
        )
    )
    return write_varint(len(body)) + body
