"""Classic-protocol members inside a consumer group (KIP-848 online migration): JoinGroup, SyncGroup,
Heartbeat and LeaveGroup mapped onto the consumer group's epochs (Kafka's GroupMetadataManager
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
classicGroupLeaveToConsumerGroup).

A classic member's generation is its member epoch. Its JoinGroup carries its subscription and the
partitions it still owns in the consumer protocol's embedded format: the JoinGroup is its
heartbeat of the consumer protocol, with the same reconciliation, and its SyncGroup collects the
partitions it was given. It never leads: the coordinator assigns. A Heartbeat answers
REBALANCE_IN_PROGRESS whenever the member has something to reconcile, so it rejoins.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kcoord.coordinator.groups.consumer.heartbeat import Refused, remove_member_records, update_member
from kcoord.coordinator.groups.consumer.model import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from kcoord.coordinator.groups.consumer.records import ConsumerRecord
from kcoord.coordinator.groups.consumer.topics import Describable, TopicView
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.protocol.consumer_protocol import decode_assignment, decode_subscription, encode_assignment
from kcoord.protocol.errors import DecodeError

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "ClassicJoin",
    "classic_member",
    "encode_member_assignment",
    "plan_classic_join",
    "rebalance_needed",
    "supports_classic_protocols",
]

CONSUMER_PROTOCOL_TYPE = "consumer"


class ClassicJoin:
    """What a classic member's JoinGroup to a consumer group writes and answers."""

    __slots__ = ("member", "records")

    def __init__(self, records: list[ConsumerRecord], member: ConsumerMember) -> None:
        self.records = records
        self.member = member


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: Sequence[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol
    every classic member of the group also supports (any, when there is none)."""
    if not group.members:
        return bool(protocol_type) and bool(names)
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(name in {n for n, _ in c.supported_protocols} for c in classic) for name in names)


def _subscription(protocols: Sequence[tuple[str, bytes]]) -> dict[str, Any]:
    """The embedded subscription of the member's first protocol (Kafka's deserializeSubscription)."""
    try:
        _, subscription = decode_subscription(protocols[0][1])
    except (DecodeError, IndexError, ValueError):
        raise Refused(
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "Malformed embedded consumer subscription."
        ) from None
    return subscription


def _owned(subscription: dict[str, Any], topics: TopicView) -> list[tuple[uuid.UUID, list[int]]]:
    owned = []
    for entry in subscription.get("owned_partitions") or ():
        described = topics.describe(entry["topic"])
        if described is not None:
            owned.append((described[0], list(entry["partitions"])))
    return owned


def plan_classic_join(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    protocols: Sequence[tuple[str, bytes]],
    client: tuple[str, str],
    topics: TopicView,
    default_assignor: str,
    describable: Describable | None = None,
) -> ClassicJoin:
    """Kafka's classicGroupJoinToConsumerGroup after its entry checks, for a member with an id."""
    records: list[ConsumerRecord] = []
    replaced = None
    member = group.members.get(member_id) or ConsumerMember(member_id)
    if instance_id is not None:
        existing_id = group.static_members.get(instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if existing is not None and existing.member_id != member_id:
            # Kafka's getOrMaybeSubscribeStaticConsumerGroupMember: a classic static member that
            # rejoins under a new id replaces its old self.
            remove_member_records(group.group_id, existing.member_id, records)
            replaced = existing.member_id
            member = replace(existing, member_id=member_id)
    subscription = _subscription(protocols)
    names: tuple[str, ...] = tuple(subscription.get("topics") or ())
    rack = subscription.get("rack_id")
    updated = replace(
        member,
        instance_id=instance_id if instance_id is not None else member.instance_id,
        rack_id=rack if isinstance(rack, str) else member.rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms
        if rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        subscribed_topic_names=names,
        client_id=client[0],
        client_host=client[1],
        classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)),
    )
    owned = _owned(subscription, topics)
    reconciled = update_member(
        group, member, updated, replaced, owned, topics, default_assignor, records, describable
    )
    return ClassicJoin(records, reconciled)


def classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> tuple[ConsumerMember | None, ErrorCode | None]:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        static_id = group.static_members.get(instance_id)
        member = group.members.get(static_id) if static_id is not None else None
        if member is not None and member.member_id != member_id:
            return None, ErrorCode.FENCED_INSTANCE_ID
    if member is None or member.classic is None:
        return None, ErrorCode.UNKNOWN_MEMBER_ID
    return member, None


def rebalance_needed(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's classicGroupHeartbeatToConsumerGroup: rejoin when the group moved past the member,
    when it must revoke, or when partitions it waits for were released."""
    if member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS:
        return True
    return member.state is MemberState.UNRELEASED_PARTITIONS and not _waiting_on_unreleased(group, member)


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's ConsumerGroup.waitingOnUnreleasedPartition."""
    for topic_id, partitions in group.target_of(member.member_id).items():
        assigned = member.assigned.get(topic_id, frozenset())
        for p in partitions:
            if p not in assigned and group.current_partition_epoch(topic_id, p) != -1:
                return True
    return False


def encode_member_assignment(
    member: ConsumerMember, topics: TopicView, assignment: Assignment | None = None
) -> bytes:
    """The member's partitions in the consumer protocol's assignment format, at the version of its
    first protocol's subscription (Kafka's prepareAssignment); topics by name."""
    assert member.classic is not None
    try:
        version, _ = decode_subscription(member.classic.supported_protocols[0][1])
    except (DecodeError, IndexError, ValueError):
        version = 0
    rows = []
    for topic_id, partitions in (member.assigned if assignment is None else assignment).items():
        name = topics.name_of(topic_id)
        if name is not None:
            rows.append({"topic": name, "partitions": sorted(partitions)})
    rows.sort(key=lambda row: str(row["topic"]))
    return encode_assignment({"assigned_partitions": rows, "user_data": None}, min(version, 3))


def decode_member_assignment(data: bytes, topics: TopicView) -> dict[uuid.UUID, frozenset[int]]:
    """A classic member's assignment bytes as partitions by topic id (topics that no longer exist
    are left out), for the upgrade of a classic group."""
    if not data:
        return {}
    try:
        _, assignment = decode_assignment(data)
    except (DecodeError, ValueError):
        return {}
    out: dict[uuid.UUID, frozenset[int]] = {}
    for entry in assignment.get("assigned_partitions") or ():
        described = topics.describe(entry["topic"])
        if described is not None and entry["partitions"]:
            out[described[0]] = out.get(described[0], frozenset()) | frozenset(entry["partitions"])
    return out
