"""ShareGroupDescribe (77): a share group as Kafka describes it (GroupMetadataManager.shareGroupDescribe,
ShareGroup.asDescribedGroup): no target assignment per member, the assignor is `simple`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.describe import NamedAssignment, named_assignment
from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.runtime import Runtime
from kcoord.coordinator.groups.share.assignor import SIMPLE_ASSIGNOR
from kcoord.coordinator.groups.share.model import ShareGroup, ShareGroupState

__all__ = [
    "ShareGroupDescription",
    "ShareMemberDescription",
    "describe_share_group",
    "describe_share_groups",
    "not_a_share_group",
]


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


def not_a_share_group(rt: Runtime, group_id: str) -> str | None:
    """GROUP_ID_NOT_FOUND's message when the id holds a classic or consumer group (Kafka's
    getOrMaybeCreateShareGroup and shareGroup: "Group g is not a share group."), else None."""
    if group_id in rt.share_groups:
        return None
    if group_id in rt.consumer_groups or rt.groups.get(group_id) is not None:
        return f"Group {group_id} is not a share group."
    return None


def describe_share_groups(
    rt: Runtime, topics: TopicView, group_ids: Sequence[str]
) -> list[ShareGroupDescription]:
    """One description per id, in order (GroupMetadataManager.shareGroupDescribe)."""
    out = []
    for group_id in group_ids:
        group = rt.share_groups.get(group_id)
        error = rt.phase_error(group_id)
        if error is not None:
            out.append(ShareGroupDescription(group_id, error))
        elif group is None:
            message = not_a_share_group(rt, group_id) or f"Group {group_id} not found."
            out.append(ShareGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
        else:
            out.append(describe_share_group(group, topics))
    return out
