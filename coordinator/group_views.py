"""JSON views of groups for the HTTP inspector (`/v1/groups`, `/v1/groups/{id}`), and their lag.

Read-only: they read the live `Group` objects and committed offsets between two loop turns, so a view
is a consistent snapshot. Subscriptions and assignments of `consumer` groups are decoded with Kafka's
ConsumerProtocol schemas (protocol/consumer_protocol.py); other protocol types show their byte size.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.group import Group
from coordinator.groups.manager import GroupManager
from coordinator.groups.member import Member
from coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE
from coordinator.metrics import Lag, partition_lag
from coordinator.topics.data import TopicData
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import DecodeError

__all__ = ["GroupLags", "group_detail", "group_lags", "group_summary"]

GroupLags = dict[tuple[str, int], tuple[int, Lag | None]]


def group_lags(manager: GroupManager, data: TopicData, group: Group, now_ms: int) -> GroupLags:
    """(topic, partition) -> (committed offset, lag or None when the partition has no log here)."""
    out: GroupLags = {}
    for (topic, partition), record in manager.committed_offsets(group.group_id).items():
        log = data.logs.get(topic, partition)
        out[(topic, partition)] = (record.offset, partition_lag(log, record.offset, now_ms))
    return out


def group_summary(group: Group) -> dict[str, Any]:
    return {
        "group_id": group.group_id,
        "state": group.state.value,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol_name,
        "generation_id": group.generation_id,
        "leader": group.leader_id,
        "members": len(group.members),
    }


def group_detail(manager: GroupManager, data: TopicData, group: Group, now_ms: int) -> dict[str, Any]:
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    offsets = []
    for (topic, partition), (offset, lag) in sorted(group_lags(manager, data, group, now_ms).items()):
        record = manager.committed_offsets(group.group_id)[(topic, partition)]
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
    return {
        **group_summary(group),
        "members": [_member(m, group.protocol_name, consumer) for m in group.members.values()],
        "offsets": offsets,
    }


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
