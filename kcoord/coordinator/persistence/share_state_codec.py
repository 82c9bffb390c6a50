"""The share-partition tenant's records (kcoord/coordinator/share_partitions/records.py) <-> storage
records: storage type 0x50 ShareSnapshot (key ShareSnapshotKey, Kafka's record type 0 as its version),
0x51 ShareUpdate (key ShareUpdateKey, version 1); values ShareSnapshotValue / ShareUpdateValue v0, the
bytes Kafka 4.3 writes to `__share_group_state` (kcoord/protocol/messages/share_state_records.py).
A None value is a tombstone of that key."""

from __future__ import annotations

from typing import Any

from kcoord import storage
from kcoord.coordinator.share_partitions import (
    RecordState,
    ShareRecord,
    ShareSnapshot,
    ShareTombstone,
    ShareUpdate,
    StateBatch,
)
from kcoord.protocol.messages import share_state_records as ss
from kcoord.protocol.messages.records import decode_exact, encode_versioned

__all__ = [
    "SHARE_RECORD_TYPES",
    "render_share_record",
    "share_record_from_storage",
    "share_record_to_storage",
]

SHARE_RECORD_TYPES = (ss.SHARE_SNAPSHOT_RECORD_TYPE, ss.SHARE_UPDATE_RECORD_TYPE)


def _key(record: ShareRecord, update: bool) -> bytes:
    fields = {"group_id": record.group_id, "topic_id": record.topic_id, "partition": record.partition}
    if update:
        return encode_versioned(ss.SHARE_UPDATE_KEY, 1, fields)
    return encode_versioned(ss.SHARE_SNAPSHOT_KEY, 0, fields)


def _batches(batches: tuple[StateBatch, ...]) -> list[dict[str, int]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": int(b.delivery_state),
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def share_record_to_storage(record: ShareRecord) -> storage.Record:
    match record:
        case ShareTombstone():
            kind = ss.SHARE_UPDATE_RECORD_TYPE if record.update else ss.SHARE_SNAPSHOT_RECORD_TYPE
            return storage.Record(kind, _key(record, record.update), None)
        case ShareSnapshot():
            value = {
                "snapshot_epoch": record.snapshot_epoch,
                "state_epoch": record.state_epoch,
                "leader_epoch": record.leader_epoch,
                "start_offset": record.start_offset,
                "delivery_complete_count": record.delivery_complete_count,
                "create_timestamp": record.create_timestamp_ms,
                "write_timestamp": record.write_timestamp_ms,
                "state_batches": _batches(record.state_batches),
            }
            encoded = encode_versioned(ss.SHARE_SNAPSHOT_VALUE, 0, value)
            return storage.Record(ss.SHARE_SNAPSHOT_RECORD_TYPE, _key(record, False), encoded)
        case ShareUpdate():
            value = {
                "snapshot_epoch": record.snapshot_epoch,
                "leader_epoch": record.leader_epoch,
                "start_offset": record.start_offset,
                "delivery_complete_count": record.delivery_complete_count,
                "state_batches": _batches(record.state_batches),
            }
            encoded = encode_versioned(ss.SHARE_UPDATE_VALUE, 0, value)
            return storage.Record(ss.SHARE_UPDATE_RECORD_TYPE, _key(record, True), encoded)
    raise TypeError(f"not a share record: {record!r}")


def _state_batches(value: dict[str, Any]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(b["first_offset"], b["last_offset"], RecordState(b["delivery_state"]), b["delivery_count"])
        for b in value["state_batches"]
    )


def share_record_from_storage(record: storage.Record) -> ShareRecord:
    update = record.type == ss.SHARE_UPDATE_RECORD_TYPE
    k = decode_exact(ss.SHARE_UPDATE_KEY if update else ss.SHARE_SNAPSHOT_KEY, record.key)
    where = (k["group_id"], k["topic_id"], k["partition"])
    if record.value is None:
        return ShareTombstone(*where, update=update)
    if update:
        v = decode_exact(ss.SHARE_UPDATE_VALUE, record.value)
        return ShareUpdate(*where, v["snapshot_epoch"], v["leader_epoch"], v["start_offset"],
                           _state_batches(v), v["delivery_complete_count"])  # fmt: skip
    v = decode_exact(ss.SHARE_SNAPSHOT_VALUE, record.value)
    return ShareSnapshot(
        *where, v["snapshot_epoch"], v["state_epoch"], v["leader_epoch"], v["start_offset"],
        _state_batches(v), v["create_timestamp"], v["write_timestamp"], v["delivery_complete_count"],
    )  # fmt: skip


def render_share_record(record: ShareRecord) -> str:
    where = f"group={record.group_id} topic_id={record.topic_id} partition={record.partition}"
    if isinstance(record, ShareTombstone):
        return f"share_{'update' if record.update else 'snapshot'} {where} tombstone"
    batches = ",".join(
        f"{b.first_offset}-{b.last_offset}:{b.delivery_state.name}x{b.delivery_count}"
        for b in record.state_batches
    )
    if isinstance(record, ShareSnapshot):
        head = (
            f"share_snapshot {where} snapshot_epoch={record.snapshot_epoch} state_epoch={record.state_epoch}"
        )
    else:
        head = f"share_update {where} snapshot_epoch={record.snapshot_epoch}"
    return f"{head} start_offset={record.start_offset} batches=[{batches}]"
