"""The records of a consumer-protocol group (Kafka's `__consumer_offsets` key types 3, 5, 6, 7, 8)
and how each one changes a group: `apply`, the one replay path of recovery and of live heartbeats.

A value of None is a tombstone. Kafka writes, per change: the member's subscription when it
changes (MemberMetadata), the group epoch when it is bumped (ConsumerGroupMetadata), the target
assignment of each member whose target changed and then the target's epoch (TargetAssignmentMember,
TargetAssignmentMetadata), and the member's current assignment when it moves (CurrentMemberAssignment).
A leaving member gets tombstones for its current assignment, its target and its subscription, in
that order (GroupMetadataManager.removeMember); a deleted group gets them for every member, then
for its target epoch and its group epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kcoord.coordinator.groups.consumer.model import Assignment, ConsumerGroup, ConsumerMember

__all__ = [
    "ConsumerGroupEpoch",
    "ConsumerMemberAssignment",
    "ConsumerMemberSubscription",
    "ConsumerRecord",
    "ConsumerTargetEpoch",
    "ConsumerTargetMember",
    "apply",
]


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpoch:
    """Kafka key type 3, ConsumerGroupMetadata: the group epoch (None: the group is deleted)."""

    group_id: str
    epoch: int | None
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerMemberSubscription:
    """Kafka key type 5, ConsumerGroupMemberMetadata: the subscription fields of `member`
    (None: the member left)."""

    group_id: str
    member_id: str
    member: ConsumerMember | None


@dataclass(frozen=True, slots=True)
class ConsumerTargetEpoch:
    """Kafka key type 6, ConsumerGroupTargetAssignmentMetadata: the target assignment's epoch."""

    group_id: str
    epoch: int | None


@dataclass(frozen=True, slots=True)
class ConsumerTargetMember:
    """Kafka key type 7, ConsumerGroupTargetAssignmentMember: one member's target assignment."""

    group_id: str
    member_id: str
    partitions: Assignment | None


@dataclass(frozen=True, slots=True)
class ConsumerMemberAssignment:
    """Kafka key type 8, ConsumerGroupCurrentMemberAssignment: the assignment fields of `member`
    (epochs, state, assigned and pending partitions; None: the member left)."""

    group_id: str
    member_id: str
    member: ConsumerMember | None


ConsumerRecord = (
    ConsumerGroupEpoch
    | ConsumerMemberSubscription
    | ConsumerTargetEpoch
    | ConsumerTargetMember
    | ConsumerMemberAssignment
)


def apply(groups: dict[str, ConsumerGroup], record: ConsumerRecord) -> None:
    """Change `groups` as `record` says (Kafka's GroupMetadataManager.replay for these keys)."""
    group = groups.get(record.group_id)
    match record:
        case ConsumerGroupEpoch(epoch=None):
            groups.pop(record.group_id, None)
            return
        case ConsumerTargetEpoch(epoch=None):
            return  # only written with the group's deletion, whose group tombstone removes it
        case (
            ConsumerMemberSubscription(member=None)
            | ConsumerMemberAssignment(member=None)
            | ConsumerTargetMember(partitions=None)
        ):
            if group is not None:
                _remove(group, record)
            return
    if group is None:
        group = groups[record.group_id] = ConsumerGroup(record.group_id)
    _put(group, record)


def _put(group: ConsumerGroup, record: ConsumerRecord) -> None:
    match record:
        case ConsumerGroupEpoch(epoch=int(epoch)):
            group.group_epoch = epoch
            group.metadata_hash = record.metadata_hash
        case ConsumerTargetEpoch(epoch=int(epoch)):
            group.assignment_epoch = epoch
        case ConsumerTargetMember(partitions=partitions) if partitions is not None:
            group.target[record.member_id] = partitions
        case ConsumerMemberSubscription(member=ConsumerMember() as new):
            old = group.members.get(record.member_id) or ConsumerMember(record.member_id)
            group.put_member(_with_subscription(old, new))
        case ConsumerMemberAssignment(member=ConsumerMember() as new):
            old = group.members.get(record.member_id) or ConsumerMember(record.member_id)
            group.put_member(_with_assignment(old, new))


def _remove(group: ConsumerGroup, record: ConsumerRecord) -> None:
    match record:
        case ConsumerMemberAssignment():
            member = group.members.get(record.member_id)
            if member is not None:  # epoch -1 and nothing owned, until its subscription goes too
                group.put_member(
                    _with_assignment(
                        member, ConsumerMember(record.member_id, member_epoch=-1, previous_member_epoch=-1)
                    )
                )
        case ConsumerTargetMember():
            group.target.pop(record.member_id, None)
        case ConsumerMemberSubscription():
            group.remove_member(record.member_id)


def _with_subscription(member: ConsumerMember, source: ConsumerMember) -> ConsumerMember:
    return replace(
        member,
        instance_id=source.instance_id,
        rack_id=source.rack_id,
        client_id=source.client_id,
        client_host=source.client_host,
        subscribed_topic_names=source.subscribed_topic_names,
        subscribed_topic_regex=source.subscribed_topic_regex,
        server_assignor=source.server_assignor,
        rebalance_timeout_ms=source.rebalance_timeout_ms,
        classic=source.classic,
    )


def _with_assignment(member: ConsumerMember, source: ConsumerMember) -> ConsumerMember:
    return replace(
        member,
        member_epoch=source.member_epoch,
        previous_member_epoch=source.previous_member_epoch,
        state=source.state,
        assigned=source.assigned,
        pending_revocation=source.pending_revocation,
    )
