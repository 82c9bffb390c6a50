"""ConsumerGroupDescribe (69): a consumer group as Kafka describes it
(GroupMetadataManager.consumerGroupDescribe, ConsumerGroup.asDescribedGroup)."""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.model import Assignment, ConsumerGroup, ConsumerGroupState
from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.errors import ErrorCode

__all__ = [
    "ConsumerGroupDescription",
    "ConsumerMemberDescription",
    "NamedAssignment",
    "describe_group",
    "named_assignment",
]

NamedAssignment = tuple[tuple[object, str, tuple[int, ...]], ...]
"""(topic id, topic name, partitions) per topic that still exists, sorted by name."""

MEMBER_TYPE_CLASSIC = 0  # KIP-1099: ConsumerGroupDescribe v1's MemberType
MEMBER_TYPE_CONSUMER = 1


@dataclass(frozen=True, slots=True)
class ConsumerMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: NamedAssignment
    target_assignment: NamedAssignment
    member_type: int = MEMBER_TYPE_CONSUMER


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ConsumerGroupState.DEAD.value
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerMemberDescription, ...] = ()


def named_assignment(assignment: Assignment, topics: TopicView) -> NamedAssignment:
    rows = []
    for topic_id, partitions in assignment.items():
        name = topics.name_of(topic_id)
        if name is not None:  # a deleted topic is left out, as Kafka's describe does
            rows.append((topic_id, name, tuple(sorted(partitions))))
    return tuple(sorted(rows, key=lambda row: row[1]))


def describe_group(
    group: ConsumerGroup, topics: TopicView, default_assignor: str
) -> ConsumerGroupDescription:
    members = tuple(
        ConsumerMemberDescription(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=m.subscribed_topic_names,
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=named_assignment(m.assigned, topics),
            target_assignment=named_assignment(group.target_of(m.member_id), topics),
            member_type=MEMBER_TYPE_CLASSIC if m.classic is not None else MEMBER_TYPE_CONSUMER,
        )
        for m in group.members.values()
    )
    return ConsumerGroupDescription(
        group_id=group.group_id,
        error=ErrorCode.NONE,
        state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(default_assignor),
        members=members,
    )
