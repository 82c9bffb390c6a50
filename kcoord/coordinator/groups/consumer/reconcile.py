"""Reconciliation: how a member moves from its current assignment towards its target, one step per
heartbeat (Kafka's modern/consumer/CurrentAssignmentBuilder.build and computeNextAssignment).

The rule that keeps every partition owned at most once: a member gets a partition only when no
other member owns it (assigned or pending revocation, `ConsumerGroup.current_partition_epoch`), and a
member that must give partitions up keeps its epoch, with them pending revocation, until its
heartbeat no longer lists them as owned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from kcoord.coordinator.groups.consumer.model import Assignment, ConsumerMember, MemberState

__all__ = ["FencedMemberEpoch", "Owned", "next_assignment"]

Owned = Sequence[tuple[uuid.UUID, Sequence[int]]] | None
"""The partitions a heartbeat says the member owns; None when the heartbeat did not say."""


class FencedMemberEpoch(Exception):
    """The member must abandon its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


def next_assignment(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned,
) -> ConsumerMember:
    """The member after one reconciliation step (itself when nothing changes)."""
    match member.state:
        case MemberState.STABLE:
            if member.member_epoch != target_epoch:
                return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
            return member
        case MemberState.UNREVOKED_PARTITIONS:
            if _owns_any(owned, member.pending_revocation):
                return member
            return _compute(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
        case MemberState.UNRELEASED_PARTITIONS:
            return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise FencedMemberEpoch(
            "The member is in an unknown state: it must abandon its partitions and rejoin."
        )
    return _compute(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Kafka's ownsRevokedPartitions: without a list of owned partitions, assume it still owns them."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, ps in owned for p in ps)


def _compute(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned,
) -> ConsumerMember:
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    to_assign: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in target.keys() | member.assigned.keys():
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        keep = current & wanted
        give_up = current - keep
        missing = wanted - keep
        free = frozenset(p for p in missing if partition_epoch(topic_id, p) == -1)
        unreleased = unreleased or len(free) != len(missing)
        if keep:
            assigned[topic_id] = keep
        if give_up:
            revoking[topic_id] = give_up
        if free:
            to_assign[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        # Revoke first: the member keeps its epoch until it reports the partitions revoked.
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            member_epoch=epoch,
            previous_member_epoch=member.member_epoch,  # Builder.updateMemberEpoch: always the old one
            assigned=assigned,
            pending_revocation=revoking,
        )
    for topic_id, partitions in to_assign.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    return replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation={},
    )
