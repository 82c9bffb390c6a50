"""ShareGroupDescribe (77): a share group as Kafka describes it (GroupMetadataManager.shareGroupDescribe,
ShareGroup.asDescribedGroup): no target assignment per member, the assignor is `simple`."""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.describe import NamedAssignment, named_assignment
from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.assignor import SIMPLE_ASSIGNOR
from kcoord.coordinator.groups.share.model import ShareGroup, ShareGroupState

__all__ = ["ShareGroupDescription", "ShareMemberDescription", "describe_share_group"]


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: NamedAssignment


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ShareGroupState.DEAD.value
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ShareMemberDescription, ...] = ()


def describe_share_group(group: ShareGroup, topics: TopicView) -> ShareGroupDescription:
    members = tuple(
        ShareMemberDescription(
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=m.subscribed_topic_names,
            assignment=named_assignment(m.assigned, topics),
        )
        for m in group.members.values()
    )
    return ShareGroupDescription(
        group_id=group.group_id,
        error=ErrorCode.NONE,
        state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=SIMPLE_ASSIGNOR,
        members=members,
    )
