"""The share groups' records (kcoord/coordinator/groups/share/records.py) <-> storage records,
through the schemas of `protocol.messages.share_group_records` and the storage types of
`protocol.messages.records.RECORD_TYPES` (0x40 + Kafka's key type, 10-15). None is a tombstone."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kcoord import storage
from kcoord.coordinator.groups.consumer.model import Assignment, assignment_of
from kcoord.coordinator.groups.share.model import ShareMember, TopicPartitionsInfo
from kcoord.coordinator.groups.share.records import (
    SHARE_RECORD_CLASSES,
    ShareGroupEpoch,
    ShareMemberAssignment,
    ShareMemberSubscription,
    ShareRecord,
    ShareStatePartitions,
    ShareTargetEpoch,
    ShareTargetMember,
)
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import RECORD_TYPES, decode_exact, encode_versioned

__all__ = [
    "SHARE_RECORD_CLASSES",
    "SHARE_RECORD_TYPES",
    "render_share",
    "share_from_storage",
    "share_to_storage",
]

_SUBSCRIPTION = schemas.SHARE_GROUP_MEMBER_METADATA_RECORD_TYPE
_EPOCH = schemas.SHARE_GROUP_METADATA_RECORD_TYPE
_TARGET_EPOCH = schemas.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE
_TARGET_MEMBER = schemas.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE
_CURRENT = schemas.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE
_STATE_PARTITIONS = schemas.SHARE_GROUP_STATE_PARTITION_METADATA_RECORD_TYPE
SHARE_RECORD_TYPES = frozenset(
    {_SUBSCRIPTION, _EPOCH, _TARGET_EPOCH, _TARGET_MEMBER, _CURRENT, _STATE_PARTITIONS}
)


def _encode(record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> storage.Record:
    row = RECORD_TYPES[record_type]
    key_bytes = encode_versioned(row.key, row.key_version, key)
    value_bytes = None if value is None else encode_versioned(row.value, row.value_version, value)
    return storage.Record(record_type, key_bytes, value_bytes)


def _partitions(assignment: Assignment) -> list[dict[str, Any]]:
    return [
        {"topic_id": t, "partitions": sorted(ps)}
        for t, ps in sorted(assignment.items(), key=lambda i: str(i[0]))
    ]


def _assignment(rows: Iterable[dict[str, Any]]) -> dict[uuid.UUID, frozenset[int]]:
    return assignment_of((row["topic_id"], row["partitions"]) for row in rows)


def _infos(infos: Iterable[TopicPartitionsInfo]) -> list[dict[str, Any]]:
    return [
        {"topic_id": i.topic_id, "topic_name": i.topic_name, "partitions": sorted(i.partitions)}
        for i in infos
    ]


def share_to_storage(record: ShareRecord) -> storage.Record:
    group: dict[str, Any] = {"group_id": record.group_id}
    value: dict[str, Any] | None
    match record:
        case ShareGroupEpoch():
            value = (
                None
                if record.epoch is None
                else {"epoch": record.epoch, "metadata_hash": record.metadata_hash}
            )
            return _encode(_EPOCH, group, value)
        case ShareTargetEpoch():
            value = (
                None
                if record.epoch is None
                else {"assignment_epoch": record.epoch, "assignment_timestamp": record.timestamp_ms}
            )
            return _encode(_TARGET_EPOCH, group, value)
        case ShareStatePartitions():
            if record.initialized is None:
                return _encode(_STATE_PARTITIONS, group, None)
            value = {
                "initializing_topics": _infos(record.initializing),
                "initialized_topics": _infos(record.initialized),
                "deleting_topics": [{"topic_id": t, "topic_name": n} for t, n in record.deleting],
            }
            return _encode(_STATE_PARTITIONS, group, value)
        case ShareTargetMember():
            parts = (
                None if record.partitions is None else {"topic_partitions": _partitions(record.partitions)}
            )
            return _encode(_TARGET_MEMBER, {**group, "member_id": record.member_id}, parts)
        case ShareMemberSubscription():
            return _encode(
                _SUBSCRIPTION, {**group, "member_id": record.member_id}, _subscription(record.member)
            )
        case ShareMemberAssignment():
            return _encode(_CURRENT, {**group, "member_id": record.member_id}, _current(record.member))
    raise TypeError(f"not a share-group record: {record!r}")


def _subscription(m: ShareMember | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
    }


def _current(m: ShareMember | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": 0,  # MemberState.STABLE: a share member is always reconciled
        "assigned_partitions": _partitions(m.assigned),
    }


def share_from_storage(record: storage.Record) -> ShareRecord:
    """The domain record of a storage record whose type is in SHARE_RECORD_TYPES."""
    row = RECORD_TYPES[record.type]
    key = decode_exact(row.key, record.key)
    value = None if record.value is None else decode_exact(row.value, record.value)
    group_id = key["group_id"]
    if record.type == _EPOCH:
        return ShareGroupEpoch(
            group_id, *((None, 0) if value is None else (value["epoch"], value["metadata_hash"]))
        )
    if record.type == _TARGET_EPOCH:
        if value is None:
            return ShareTargetEpoch(group_id, None)
        return ShareTargetEpoch(group_id, value["assignment_epoch"], value["assignment_timestamp"])
    if record.type == _STATE_PARTITIONS:
        return _state_partitions(group_id, value)
    member_id = key["member_id"]
    if record.type == _TARGET_MEMBER:
        return ShareTargetMember(
            group_id, member_id, None if value is None else _assignment(value["topic_partitions"])
        )
    if record.type == _SUBSCRIPTION:
        return ShareMemberSubscription(
            group_id, member_id, None if value is None else _member_subscription(member_id, value)
        )
    if value is None:
        return ShareMemberAssignment(group_id, member_id, None)
    member = ShareMember(
        member_id,
        member_epoch=value["member_epoch"],
        previous_member_epoch=value["previous_member_epoch"],
        assigned=_assignment(value["assigned_partitions"]),
    )
    return ShareMemberAssignment(group_id, member_id, member)


def _member_subscription(member_id: str, value: dict[str, Any]) -> ShareMember:
    return ShareMember(
        member_id,
        rack_id=value["rack_id"],
        client_id=value["client_id"],
        client_host=value["client_host"],
        subscribed_topic_names=tuple(value["subscribed_topic_names"]),
    )


def _state_partitions(group_id: str, value: dict[str, Any] | None) -> ShareStatePartitions:
    if value is None:
        return ShareStatePartitions(group_id, None)

    def infos(rows: Iterable[dict[str, Any]]) -> tuple[TopicPartitionsInfo, ...]:
        return tuple(
            TopicPartitionsInfo(r["topic_id"], r["topic_name"], frozenset(r["partitions"])) for r in rows
        )

    deleting = tuple((r["topic_id"], r["topic_name"]) for r in value["deleting_topics"])
    return ShareStatePartitions(
        group_id, infos(value["initialized_topics"]), infos(value["initializing_topics"]), deleting
    )


def render_share(record: ShareRecord) -> str:
    """One line for `kcoord storage dump`."""
    name = RECORD_TYPES[share_to_storage(record).type].name
    return " ".join([name, *(f"{k}={v}" for k, v in _fields(record).items())])


def _fields(record: ShareRecord) -> dict[str, object]:
    out: dict[str, object] = {"group": record.group_id}
    match record:
        case ShareGroupEpoch() | ShareTargetEpoch():
            out["epoch"] = "tombstone" if record.epoch is None else record.epoch
        case ShareStatePartitions():
            out["initialized"] = (
                "tombstone" if record.initialized is None else _short_infos(record.initialized)
            )
        case ShareTargetMember():
            out["member"] = record.member_id
            out["target"] = "tombstone" if record.partitions is None else _short(record.partitions)
        case ShareMemberSubscription():
            out["member"] = record.member_id
            out["subscription"] = (
                "tombstone" if record.member is None else list(record.member.subscribed_topic_names)
            )
        case ShareMemberAssignment():
            out["member"] = record.member_id
            m = record.member
            out["assignment"] = "tombstone" if m is None else f"epoch={m.member_epoch} {_short(m.assigned)}"
    return out


def _short(assignment: Assignment) -> str:
    return (
        "{"
        + ",".join(f"{t}:{sorted(ps)}" for t, ps in sorted(assignment.items(), key=lambda i: str(i[0])))
        + "}"
    )


def _short_infos(infos: Iterable[TopicPartitionsInfo]) -> str:
    return "[" + ",".join(f"{i.topic_name}:{sorted(i.partitions)}" for i in infos) + "]"
