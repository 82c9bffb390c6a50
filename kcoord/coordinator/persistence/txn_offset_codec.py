"""Pending transactional offsets (kcoord/coordinator/groups/records.py TxnOffsetCommitRecord) <-> storage
records: storage type 7, key TxnOffsetCommitKey v0, value TxnOffsetCommitValue v0
(`protocol.messages.records`). A None value is a tombstone: the producer's transaction completed."""

from __future__ import annotations

from kcoord import storage
from kcoord.coordinator.groups.records import TxnOffsetCommitRecord, TxnOffsetTombstone
from kcoord.protocol.messages.records import (
    RECORD_TYPES,
    TXN_OFFSET_COMMIT_RECORD_TYPE,
    decode_exact,
    encode_versioned,
)

__all__ = ["TXN_OFFSET_RECORD_TYPE", "render_txn_offset", "txn_offset_from_storage", "txn_offset_to_storage"]

TXN_OFFSET_RECORD_TYPE = TXN_OFFSET_COMMIT_RECORD_TYPE
_ROW = RECORD_TYPES[TXN_OFFSET_RECORD_TYPE]


def txn_offset_to_storage(record: TxnOffsetCommitRecord | TxnOffsetTombstone) -> storage.Record:
    key = encode_versioned(
        _ROW.key,
        _ROW.key_version,
        {
            "producer_id": record.producer_id,
            "group": record.group_id,
            "topic": record.topic,
            "partition": record.partition,
        },
    )
    if isinstance(record, TxnOffsetTombstone):
        return storage.Record(TXN_OFFSET_RECORD_TYPE, key, None)
    value = encode_versioned(
        _ROW.value,
        _ROW.value_version,
        {
            "producer_epoch": record.producer_epoch,
            "offset": record.offset,
            "leader_epoch": record.leader_epoch,
            "metadata": record.metadata,
            "commit_timestamp": record.commit_timestamp_ms,
        },
    )
    return storage.Record(TXN_OFFSET_RECORD_TYPE, key, value)


def txn_offset_from_storage(record: storage.Record) -> TxnOffsetCommitRecord | TxnOffsetTombstone:
    k = decode_exact(_ROW.key, record.key)
    if record.value is None:
        return TxnOffsetTombstone(k["producer_id"], k["group"], k["topic"], k["partition"])
    v = decode_exact(_ROW.value, record.value)
    return TxnOffsetCommitRecord(
        producer_id=k["producer_id"],
        producer_epoch=v["producer_epoch"],
        group_id=k["group"],
        topic=k["topic"],
        partition=k["partition"],
        offset=v["offset"],
        leader_epoch=v["leader_epoch"],
        metadata=v["metadata"],
        commit_timestamp_ms=v["commit_timestamp"],
    )


def render_txn_offset(record: TxnOffsetCommitRecord | TxnOffsetTombstone) -> str:
    where = (
        f"producer_id={record.producer_id} group={record.group_id} topic={record.topic} "
        f"partition={record.partition}"
    )
    if isinstance(record, TxnOffsetTombstone):
        return f"txn_offset_commit {where} tombstone"
    return (
        f"txn_offset_commit {where} producer_epoch={record.producer_epoch} offset={record.offset} "
        f"leader_epoch={record.leader_epoch} metadata={record.metadata!r} "
        f"commit_timestamp={record.commit_timestamp_ms}"
    )
