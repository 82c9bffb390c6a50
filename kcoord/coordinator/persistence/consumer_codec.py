"""The consumer protocol's group records (kcoord/coordinator/groups/consumer/records.py) <-> storage
records, through the schemas of `protocol.messages.consumer_group_records` and the storage types of
`protocol.messages.records.RECORD_TYPES` (0x40 + Kafka's key type). A None value is a tombstone."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kcoord import storage
from kcoord.coordinator.groups.consumer.model import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerMember,
    MemberState,
    assignment_of,
)
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerRecord,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.protocol.messages import records as schemas
from kcoord.protocol.messages.records import RECORD_TYPES, decode_exact, encode_versioned

__all__ = ["CONSUMER_RECORD_TYPES", "consumer_from_storage", "consumer_to_storage", "render_consumer"]

_EPOCH = schemas.CONSUMER_GROUP_METADATA_RECORD_TYPE
_SUBSCRIPTION = schemas.CONSUMER_GROUP_MEMBER_METADATA_RECORD_TYPE
_TARGET_EPOCH = schemas.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_RECORD_TYPE
_TARGET_MEMBER = schemas.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_RECORD_TYPE
_CURRENT = schemas.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_RECORD_TYPE
CONSUMER_RECORD_TYPES = frozenset({_EPOCH, _SUBSCRIPTION, _TARGET_EPOCH, _TARGET_MEMBER, _CURRENT})


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


def consumer_to_storage(record: ConsumerRecord) -> storage.Record:
    group: dict[str, Any] = {"group_id": record.group_id}
    value: dict[str, Any] | None
    match record:
        case ConsumerGroupEpoch():
            value = (
                None
                if record.epoch is None
                else {"epoch": record.epoch, "metadata_hash": record.metadata_hash}
            )
            return _encode(_EPOCH, group, value)
        case ConsumerTargetEpoch():
            return _encode(
                _TARGET_EPOCH, group, None if record.epoch is None else {"assignment_epoch": record.epoch}
            )
        case ConsumerTargetMember():
            key = {**group, "member_id": record.member_id}
            value = (
                None if record.partitions is None else {"topic_partitions": _partitions(record.partitions)}
            )
            return _encode(_TARGET_MEMBER, key, value)
        case ConsumerMemberSubscription():
            key = {**group, "member_id": record.member_id}
            return _encode(
                _SUBSCRIPTION, key, None if record.member is None else _subscription(record.member)
            )
        case ConsumerMemberAssignment():
            key = {**group, "member_id": record.member_id}
            return _encode(_CURRENT, key, None if record.member is None else _current(record.member))
    raise TypeError(f"not a consumer-group record: {record!r}")


def _subscription(m: ConsumerMember) -> dict[str, Any]:
    return {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
        "classic_member_metadata": None
        if m.classic is None
        else {
            "session_timeout_ms": m.classic.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": md} for n, md in m.classic.supported_protocols],
        },
    }


def _current(m: ConsumerMember) -> dict[str, Any]:
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": int(m.state),
        "assigned_partitions": _partitions(m.assigned),
        "partitions_pending_revocation": _partitions(m.pending_revocation),
    }


def consumer_from_storage(record: storage.Record) -> ConsumerRecord:
    """The domain record of a storage record whose type is in CONSUMER_RECORD_TYPES."""
    row = RECORD_TYPES[record.type]
    key = decode_exact(row.key, record.key)
    value = None if record.value is None else decode_exact(row.value, record.value)
    group_id = key["group_id"]
    if record.type == _EPOCH:
        if value is None:
            return ConsumerGroupEpoch(group_id, None)
        return ConsumerGroupEpoch(group_id, value["epoch"], value["metadata_hash"])
    if record.type == _TARGET_EPOCH:
        return ConsumerTargetEpoch(group_id, None if value is None else value["assignment_epoch"])
    member_id = key["member_id"]
    if record.type == _TARGET_MEMBER:
        return ConsumerTargetMember(
            group_id, member_id, None if value is None else _assignment(value["topic_partitions"])
        )
    if value is None:
        cls = ConsumerMemberSubscription if record.type == _SUBSCRIPTION else ConsumerMemberAssignment
        return cls(group_id, member_id, None)
    if record.type == _SUBSCRIPTION:
        member = ConsumerMember(
            member_id,
            instance_id=value["instance_id"],
            rack_id=value["rack_id"],
            client_id=value["client_id"],
            client_host=value["client_host"],
            subscribed_topic_names=tuple(value["subscribed_topic_names"]),
            subscribed_topic_regex=value["subscribed_topic_regex"],
            server_assignor=value["server_assignor"],
            rebalance_timeout_ms=value["rebalance_timeout_ms"],
            classic=_classic(value["classic_member_metadata"]),
        )
        return ConsumerMemberSubscription(group_id, member_id, member)
    state = value["state"]
    member = ConsumerMember(
        member_id,
        member_epoch=value["member_epoch"],
        previous_member_epoch=value["previous_member_epoch"],
        state=MemberState(state) if state in MemberState._value2member_map_ else MemberState.UNKNOWN,
        assigned=_assignment(value["assigned_partitions"]),
        pending_revocation=_assignment(value["partitions_pending_revocation"]),
    )
    return ConsumerMemberAssignment(group_id, member_id, member)


def _classic(value: dict[str, Any] | None) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    protocols = tuple((p["name"], bytes(p["metadata"])) for p in value["supported_protocols"])
    return ClassicMemberMetadata(value["session_timeout_ms"], protocols)


def render_consumer(record: ConsumerRecord) -> str:
    """One line for `kcoord storage dump`."""
    name = RECORD_TYPES[consumer_to_storage(record).type].name
    fields = {k: v for k, v in _fields(record).items()}
    return " ".join([name, *(f"{k}={v}" for k, v in fields.items())])


def _fields(record: ConsumerRecord) -> dict[str, object]:
    match record:
        case ConsumerGroupEpoch():
            return {"group": record.group_id, "epoch": "tombstone" if record.epoch is None else record.epoch}
        case ConsumerTargetEpoch():
            return {
                "group": record.group_id,
                "assignment_epoch": "tombstone" if record.epoch is None else record.epoch,
            }
        case ConsumerTargetMember():
            parts = "tombstone" if record.partitions is None else _short(record.partitions)
            return {"group": record.group_id, "member": record.member_id, "target": parts}
        case ConsumerMemberSubscription():
            m = record.member
            subs = (
                "tombstone"
                if m is None
                else f"{list(m.subscribed_topic_names)} regex={m.subscribed_topic_regex}"
            )
            return {"group": record.group_id, "member": record.member_id, "subscription": subs}
        case ConsumerMemberAssignment():
            m = record.member
            if m is None:
                return {"group": record.group_id, "member": record.member_id, "assignment": "tombstone"}
            return {
                "group": record.group_id,
                "member": record.member_id,
                "epoch": m.member_epoch,
                "previous_epoch": m.previous_member_epoch,
                "state": m.state.name,
                "assigned": _short(m.assigned),
                "revoking": _short(m.pending_revocation),
            }
    raise TypeError(record)


def _short(assignment: Assignment) -> str:
    return (
        "{"
        + ",".join(f"{t}:{sorted(ps)}" for t, ps in sorted(assignment.items(), key=lambda i: str(i[0])))
        + "}"
    )
