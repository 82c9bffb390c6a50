"""What a coordinator says about one group, for `kcoord groups`: classic or consumer-protocol (KIP-848).

Kafka's AdminClient.describeConsumerGroups (DescribeConsumerGroupsHandler, which
ConsumerGroupCommand calls) asks with ConsumerGroupDescribe (69) first and falls back to
DescribeGroups (15) for a group that is not a consumer-protocol group (GROUP_ID_NOT_FOUND) or a
coordinator that does not speak ConsumerGroupDescribe; so does `describe_group`. A consumer group
comes back with its group epoch, target assignment epoch and server assignor, and each member with
its epoch and its current and target assignment (by topic name); a classic group with its protocol
(the assignor) and each member's ConsumerProtocol assignment, decoded here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kcoord.client_cli.kafka_client import (
    COORDINATOR_RETRIABLE,
    Broker,
    Cluster,
    Connection,
    ToolError,
    TopicPartition,
    error_text,
)
from kcoord.protocol.consumer_protocol import decode_assignment
from kcoord.protocol.errors import DecodeError, ErrorCode

__all__ = ["CLASSIC", "CONSUMER", "Group", "Member", "by_topic", "describe_group"]

DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE = 15, 69
CLASSIC, CONSUMER = "classic", "consumer"  # ListGroups v5's group types (Kafka's GroupType)


def by_topic(assignment: Iterable[TopicPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in assignment:
        topics.setdefault(topic, []).append(partition)
    return {topic: sorted(ps) for topic, ps in sorted(topics.items())}


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition]
    member_epoch: int | None = None
    """A consumer-protocol member's epoch (None in a classic group)."""
    target_assignment: list[TopicPartition] = field(default_factory=list)
    """A consumer-protocol member's target assignment (empty in a classic group)."""
    upgraded: bool | None = None
    """In a consumer group: True for a consumer-protocol member, False for a classic one (online
    migration; ConsumerGroupDescribe v1's MemberType), None when not reported."""

    def to_json(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "host": self.host,
            "assignment": by_topic(self.assignment),
            "member_epoch": self.member_epoch,
            "target_assignment": None if self.member_epoch is None else by_topic(self.target_assignment),
            "upgraded": self.upgraded,
        }


@dataclass
class Group:
    group: str
    state: str
    protocol_type: str
    protocol: str
    """The assignor: a classic group's protocol, a consumer group's server assignor."""
    coordinator: Broker
    members: list[Member] = field(default_factory=list)
    group_type: str = CLASSIC
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    """A consumer group's target assignment epoch (Kafka's TARGET-ASSIGNMENT-EPOCH)."""


def _retry_group_error(response: dict[str, Any] | None) -> bool:
    return response is not None and any(g["error_code"] in COORDINATOR_RETRIABLE for g in response["groups"])


def describe_group(cluster: Cluster, group: str) -> Group:
    """The group at its coordinator: ConsumerGroupDescribe, else DescribeGroups. An unknown group is
    state "Dead" (classic coordinators' answer)."""
    described = _describe_consumer_group(cluster, group)
    return described if described is not None else _describe_classic_group(cluster, group)


def _describe_consumer_group(cluster: Cluster, group: str) -> Group | None:
    """None when the group is not a consumer-protocol group, or the coordinator does not serve 69."""

    def call(conn: Connection) -> dict[str, Any] | None:
        if CONSUMER_GROUP_DESCRIBE not in conn.versions:
            return None
        body = {"group_ids": [group], "include_authorized_operations": False}
        return conn.request(CONSUMER_GROUP_DESCRIBE, body)

    response = cluster.with_coordinator(group, call, _retry_group_error)
    if response is None:
        return None
    described = response["groups"][0]
    error = described["error_code"]
    if error in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION):
        return None  # a classic group, or none: DescribeGroups tells which
    if error != ErrorCode.NONE:
        raise ToolError(f"cannot describe group '{group}': {error_text(error)}")
    return Group(
        group=group,
        state=described["group_state"],
        protocol_type=CONSUMER,
        protocol=described["assignor_name"],
        coordinator=cluster.coordinator(group),
        members=[_consumer_member(m) for m in described["members"]],
        group_type=CONSUMER,
        group_epoch=described["group_epoch"],
        assignment_epoch=described["assignment_epoch"],
    )


def _consumer_member(raw: dict[str, Any]) -> Member:
    return Member(
        member_id=raw["member_id"],
        group_instance_id=raw["instance_id"],
        client_id=raw["client_id"],
        host=raw["client_host"],
        assignment=_partitions(raw["assignment"]),
        member_epoch=raw["member_epoch"],
        target_assignment=_partitions(raw["target_assignment"]),
        upgraded=None if raw["member_type"] < 0 else raw["member_type"] == 1,  # v0: -1, unknown
    )


def _partitions(assignment: dict[str, Any]) -> list[TopicPartition]:
    return sorted((t["topic_name"], p) for t in assignment["topic_partitions"] for p in t["partitions"])


def _describe_classic_group(cluster: Cluster, group: str) -> Group:
    def call(conn: Connection) -> dict[str, Any]:
        body = {"groups": [group], "include_authorized_operations": False}
        return conn.request(DESCRIBE_GROUPS, body)

    response = cluster.with_coordinator(group, call, _retry_group_error)
    described = response["groups"][0]
    error = described["error_code"]
    if error == ErrorCode.GROUP_ID_NOT_FOUND:  # newer coordinators answer this instead of Dead
        described = {**described, "group_state": "Dead", "members": []}
    elif error != ErrorCode.NONE:
        raise ToolError(f"cannot describe group '{group}': {error_text(error)}")
    return Group(
        group=group,
        state=described["group_state"],
        protocol_type=described["protocol_type"],
        protocol=described["protocol_data"],
        coordinator=cluster.coordinator(group),
        members=[_classic_member(m, described["protocol_type"]) for m in described["members"]],
    )


def _classic_member(raw: dict[str, Any], protocol_type: str) -> Member:
    assignment: list[TopicPartition] = []
    if protocol_type == "consumer" and raw["member_assignment"]:
        try:
            decoded = decode_assignment(raw["member_assignment"])[1]
        except DecodeError:
            decoded = {"assigned_partitions": []}  # not a ConsumerProtocol assignment: show none
        for entry in decoded["assigned_partitions"]:
            assignment.extend((entry["topic"], p) for p in entry["partitions"])
    return Member(
        member_id=raw["member_id"],
        group_instance_id=raw["group_instance_id"],
        client_id=raw["client_id"],
        host=raw["client_host"],
        assignment=sorted(assignment),
    )
