"""JSON views of groups for the HTTP inspector (`/v1/groups`, `/v1/groups/{id}`), and their lag.

Read-only: they read the live groups and committed offsets between two loop turns, so a view is a
consistent snapshot. Both kinds of group are shown, each with its `type`: a classic group (JoinGroup
and SyncGroup) and a consumer-protocol group (KIP-848, ConsumerGroupHeartbeat; kcoord/coordinator/groups/
consumer/). Subscriptions and assignments of classic `consumer` groups are decoded with Kafka's
ConsumerProtocol schemas (kcoord/protocol/consumer_protocol.py); other protocol types show their byte size.
A consumer-protocol group's assignments are by topic id: they are shown by topic name, as
ConsumerGroupDescribe names them (a deleted topic's partitions are left out, as there).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.admin import GROUP_TYPE_CLASSIC, GROUP_TYPE_CONSUMER
from kcoord.coordinator.groups.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.groups.member import Member
from kcoord.coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE
from kcoord.protocol.consumer_protocol import decode_assignment, decode_subscription
from kcoord.protocol.errors import DecodeError
from kcoord.wiring.metrics import Lag, partition_lag

__all__ = ["AnyGroup", "GroupLags", "all_groups", "find_group", "group_detail", "group_lags", "group_summary"]

GroupLags = dict[tuple[str, int], tuple[int, Lag | None]]
AnyGroup = Group | ConsumerGroup


def all_groups(manager: GroupManager) -> list[AnyGroup]:
    """Every live group of both kinds, by group id (an id names one kind or the other)."""
    groups: list[AnyGroup] = [*manager.all_groups(), *manager.all_consumer_groups()]
    return sorted(groups, key=lambda g: g.group_id)


def find_group(manager: GroupManager, group_id: str) -> AnyGroup | None:
    group = manager.group(group_id)
    return group if group is not None else manager.consumer_group(group_id)


def group_lags(manager: GroupManager, data: TopicData, group_id: str, now_ms: int) -> GroupLags:
    """(topic, partition) -> (committed offset, lag or None when the partition has no log here).
    Offsets are shared by both kinds of group, so is lag."""
    out: GroupLags = {}
    for (topic, partition), record in manager.committed_offsets(group_id).items():
        log = data.logs.get(topic, partition)
        out[(topic, partition)] = (record.offset, partition_lag(log, record.offset, now_ms))
    return out


def group_summary(manager: GroupManager, group: AnyGroup) -> dict[str, Any]:
    if isinstance(group, ConsumerGroup):
        return _consumer_summary(manager, group)
    return {
        "group_id": group.group_id,
        "type": GROUP_TYPE_CLASSIC,
        "state": group.state.value,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol_name,
        "generation_id": group.generation_id,
        "leader": group.leader_id,
        "members": len(group.members),
    }


def group_detail(manager: GroupManager, data: TopicData, group: AnyGroup, now_ms: int) -> dict[str, Any]:
    offsets = _offsets(manager, data, group.group_id, now_ms)
    if isinstance(group, ConsumerGroup):
        members = [_consumer_member(manager, group, m) for m in group.members.values()]
        return {**_consumer_summary(manager, group), "members": members, "offsets": offsets}
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    return {
        **group_summary(manager, group),
        "members": [_member(m, group.protocol_name, consumer) for m in group.members.values()],
        "offsets": offsets,
    }


def _offsets(manager: GroupManager, data: TopicData, group_id: str, now_ms: int) -> list[dict[str, Any]]:
    committed = manager.committed_offsets(group_id)
    offsets = []
    for (topic, partition), (offset, lag) in sorted(group_lags(manager, data, group_id, now_ms).items()):
        record = committed[(topic, partition)]
        offsets.append(
            {
                "topic": topic,
                "partition": partition,
                "committed_offset": offset,
                "metadata": record.metadata,
                "commit_timestamp_ms": record.commit_timestamp_ms,
                "log_end_offset": None if lag is None else lag.log_end_offset,
                "lag": None if lag is None else lag.offsets,
                "lag_seconds": None if lag is None else lag.seconds,
            }
        )
    return offsets


def _consumer_summary(manager: GroupManager, group: ConsumerGroup) -> dict[str, Any]:
    return {
        "group_id": group.group_id,
        "type": GROUP_TYPE_CONSUMER,
        "state": group.state.value,
        "protocol_type": GROUP_TYPE_CONSUMER,  # as ListGroups reports a consumer group
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": manager.consumer_assignor(group),
        "members": len(group.members),
    }


def _consumer_member(manager: GroupManager, group: ConsumerGroup, m: ConsumerMember) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        # a member that joined with JoinGroup during online migration is "classic" (KIP-1099's MemberType)
        "member_type": GROUP_TYPE_CLASSIC if m.classic is not None else GROUP_TYPE_CONSUMER,
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        # Kafka's MemberState names (stable, unrevoked_partitions, unreleased_partitions)
        "state": m.state.name.lower(),
        "subscribed_topic_names": sorted(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "server_assignor": m.server_assignor,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "assignment": _named(manager, m.assigned),
        "pending_revocation": _named(manager, m.pending_revocation),
        "target_assignment": _named(manager, group.target_of(m.member_id)),
    }


def _named(manager: GroupManager, assignment: Assignment) -> dict[str, list[int]]:
    """Topic name -> sorted partitions; topics deleted since are left out (ConsumerGroupDescribe)."""
    out = {}
    for topic_id, partitions in assignment.items():
        name = manager.consumer.topics.name_of(topic_id)
        if name is not None:
            out[name] = sorted(partitions)
    return dict(sorted(out.items()))


def _member(m: Member, protocol_name: str | None, consumer: bool) -> dict[str, Any]:
    metadata = m.metadata_for(protocol_name) if protocol_name is not None else m.protocols[0][1]
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "session_timeout_ms": m.session_timeout_ms,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "subscription": _subscription(metadata) if consumer else {"bytes": len(metadata)},
        "assignment": _assignment(m.assignment) if consumer else {"bytes": len(m.assignment)},
    }


def _subscription(metadata: bytes) -> dict[str, Any]:
    if not metadata:
        return {"topics": []}
    try:
        version, sub = decode_subscription(metadata)
    except DecodeError as exc:
        return {"error": f"undecodable subscription: {exc}", "bytes": len(metadata)}
    return {
        "version": version,
        "topics": sorted(sub["topics"]),
        "owned_partitions": _by_topic(sub.get("owned_partitions") or []),
        "user_data_bytes": len(sub.get("user_data") or b""),
    }


def _assignment(assignment: bytes) -> dict[str, Any]:
    if not assignment:
        return {"partitions": {}}
    try:
        version, value = decode_assignment(assignment)
    except DecodeError as exc:
        return {"error": f"undecodable assignment: {exc}", "bytes": len(assignment)}
    return {
        "version": version,
        "partitions": _by_topic(value["assigned_partitions"]),
        "user_data_bytes": len(value.get("user_data") or b""),
    }


def _by_topic(entries: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for entry in entries:
        out.setdefault(entry["topic"], []).extend(entry["partitions"])
    return {topic: sorted(parts) for topic, parts in sorted(out.items())}
