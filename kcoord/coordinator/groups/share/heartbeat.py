"""ShareGroupHeartbeat's logic, pure: what a heartbeat writes and answers, computed against the
group as it is (Kafka 4.3's GroupMetadataManager.shareGroupHeartbeat and shareGroupLeave, with
GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid).

A share member takes its target assignment at once: partitions are shared, so there is nothing to
revoke and no partition epoch to wait for (ShareGroupAssignmentBuilder). The member epoch is the
target assignment's epoch it was last given.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kcoord.coordinator.groups.consumer.heartbeat import Refused
from kcoord.coordinator.groups.consumer.model import Assignment
from kcoord.coordinator.groups.consumer.topics import TopicView, metadata_hash
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.assignor import assign
from kcoord.coordinator.groups.share.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ShareGroup,
    ShareMember,
    TopicPartitionsInfo,
    merged,
)
from kcoord.coordinator.groups.share.records import (
    ShareGroupEpoch,
    ShareMemberAssignment,
    ShareMemberSubscription,
    ShareRecord,
    ShareStatePartitions,
    ShareTargetEpoch,
    ShareTargetMember,
)

__all__ = [
    "Refused",
    "ShareHeartbeatAnswer",
    "ShareHeartbeatPlan",
    "ShareHeartbeatRequest",
    "ShareHeartbeatSettings",
    "can_compute_next_target",
    "fence_records",
    "plan_heartbeat",
    "plan_leave",
    "validate",
]


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    """A ShareGroupHeartbeat typed at the door; `subscribed_topic_names` None: unchanged."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged (not sent)


@dataclass(slots=True)
class ShareHeartbeatPlan:
    records: list[ShareRecord]
    answer: ShareHeartbeatAnswer
    member: ShareMember | None  # the member after the heartbeat (None once it left)


def _blank(value: str | None) -> bool:
    """Java's `value.trim().isEmpty()` for a non-null value (throwIfEmptyString)."""
    return value is not None and all(c <= " " for c in value)


def validate(request: ShareHeartbeatRequest) -> None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid: INVALID_REQUEST."""
    for value, what in (
        (request.member_id, "MemberId"),
        (request.group_id, "GroupId"),
        (request.rack_id, "RackId"),
    ):
        if _blank(value):
            raise Refused(ErrorCode.INVALID_REQUEST, f"{what} can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise Refused(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise Refused(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


@dataclass(frozen=True, slots=True)
class ShareHeartbeatSettings:
    """What a heartbeat is decided with besides the group: the broker's and the group's settings."""

    max_size: int  # group.share.max.size
    heartbeat_interval_ms: int  # share.heartbeat.interval.ms (the group's, else the broker's)
    assignment_interval_ms: int  # share.assignment.interval.ms (the group's, else the broker's)
    now_ms: int


def plan_heartbeat(
    group: ShareGroup, request: ShareHeartbeatRequest, topics: TopicView, settings: ShareHeartbeatSettings
) -> ShareHeartbeatPlan:
    """GroupMetadataManager.shareGroupHeartbeat for a join (epoch 0) or a heartbeat of a member:
    the group is the existing one or a new one for a join (the caller decides)."""
    member_id, max_size = request.member_id, settings.max_size
    if len(group.members) >= max_size and member_id not in group.members:  # throwIfShareGroupIsFull
        raise Refused(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The share group has reached its maximum capacity of {max_size} members.",
        )
    member = _current_member(group, request)
    updated = _with_request(member, request)
    records: list[ShareRecord] = []
    if updated.subscription() != member.subscription() or member_id not in group.members:
        records.append(ShareMemberSubscription(group.group_id, member_id, updated))
    names = _subscribed_names(group, replacing=updated)
    group_epoch = _maybe_bump(group, updated.subscribed_topic_names != member.subscribed_topic_names, names,
                              topics, records)  # fmt: skip
    # Kafka 4.3: the target is recomputed at most every share.assignment.interval.ms; meanwhile a
    # member is given the current target at the current assignment epoch.
    target, target_epoch = group.target_of(member_id), group.assignment_epoch
    if group_epoch > group.assignment_epoch and can_compute_next_target(
        group.assignment_timestamp_ms, settings.assignment_interval_ms, settings.now_ms
    ):
        target = _update_target(group, group_epoch, updated, topics, records, settings.now_ms)
        target_epoch = group_epoch
    reconciled = _reconciled(group.group_id, updated, target_epoch, target, records)
    _maybe_initializing(group, names, topics, records)
    send = request.member_epoch == 0 or dict(reconciled.assigned) != dict(member.assigned)
    answer = ShareHeartbeatAnswer(
        ErrorCode.NONE, None, member_id, reconciled.member_epoch, settings.heartbeat_interval_ms,
        reconciled.assigned if send else None,
    )  # fmt: skip
    return ShareHeartbeatPlan(records, answer, reconciled)


def can_compute_next_target(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """GroupMetadataManager.canComputeNextTargetAssignment (Kafka 4.3, share groups'
    maybeUpdateTargetAssignment): a target never computed (timestamp 0) or an interval of 0 allows it at
    once, else once the interval has passed since the last one. No timer: the heartbeat after it does."""
    return assignment_timestamp_ms == 0 or interval_ms == 0 or now_ms >= assignment_timestamp_ms + interval_ms


def _reconciled(
    group_id: str, member: ShareMember, epoch: int, target: Assignment, records: list[ShareRecord]
) -> ShareMember:
    """ShareGroupAssignmentBuilder: a share member takes its target at once (nothing to revoke)."""
    if member.member_epoch == epoch and dict(member.assigned) == dict(target):
        return member
    reconciled = replace(
        member, member_epoch=epoch, previous_member_epoch=member.member_epoch, assigned=target
    )
    records.append(ShareMemberAssignment(group_id, member.member_id, reconciled))
    return reconciled


def _maybe_initializing(
    group: ShareGroup, names: Iterable[str], topics: TopicView, records: list[ShareRecord]
) -> None:
    """Kafka's maybeCreateInitializeShareGroupStateRequest: the subscribed partitions not yet
    initialized are written as initializing; the service initializes them once this is durable."""
    to_initialize = _uninitialized(group, names, topics)
    if to_initialize:
        combined = merged(group.initializing, to_initialize)
        initialized = tuple(group.initialized.values())
        # addInitializingTopicsRecords: a topic initializing again leaves deleting (Kafka warns of it)
        deleting = tuple((t, name) for t, name in group.deleting if t not in combined)
        records.append(ShareStatePartitions(group.group_id, initialized, tuple(combined.values()), deleting))


def _uninitialized(
    group: ShareGroup, names: Iterable[str], topics: TopicView
) -> dict[uuid.UUID, TopicPartitionsInfo]:
    """The subscribed partitions neither initialized nor being initialized (Kafka's
    GroupMetadataManager.subscribedTopicsChangeMap less the initialized and initializing maps)."""
    out = {}
    for name in sorted(names):
        described = topics.describe(name)
        if described is None:
            continue
        topic_id, count = described
        known: frozenset[int] = frozenset()
        for state in (group.initialized, group.initializing):
            if topic_id in state:
                known |= state[topic_id].partitions
        missing = frozenset(range(count)) - known
        if missing:
            out[topic_id] = TopicPartitionsInfo(topic_id, name, missing)
    return out


def _with_request(member: ShareMember, request: ShareHeartbeatRequest) -> ShareMember:
    """Kafka's ShareGroupMember.Builder: maybeUpdateRackId, maybeUpdateSubscribedTopicNames, then the
    request's client id and host."""
    names = request.subscribed_topic_names
    return replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        subscribed_topic_names=tuple(names) if names is not None else member.subscribed_topic_names,
        client_id=request.client_id,
        client_host=request.client_host,
    )


def _maybe_bump(
    group: ShareGroup,
    subscription_changed: bool,
    names: Iterable[str],
    topics: TopicView,
    records: list[ShareRecord],
) -> int:
    """The group epoch after this heartbeat: bumped when the subscribed topics changed, when their
    metadata hash moved, or when share partitions were initialized since the epoch was last set."""
    new_hash = metadata_hash(names, topics)
    if subscription_changed or new_hash != group.metadata_hash or group.initialized_since_epoch:
        records.append(ShareGroupEpoch(group.group_id, group.group_epoch + 1, new_hash))
        return group.group_epoch + 1
    return group.group_epoch


def _current_member(group: ShareGroup, request: ShareHeartbeatRequest) -> ShareMember:
    """getOrMaybeSubscribeShareGroupMember with throwIfShareGroupMemberEpochIsInvalid."""
    member = group.members.get(request.member_id)
    if member is None:
        if request.member_epoch != 0:
            raise Refused(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {group.group_id}.",
            )
        return ShareMember(request.member_id)
    received, known = request.member_epoch, member.member_epoch
    if received == 0:  # a member may rejoin with epoch 0: it keeps its epoch (seen on Kafka 4.3.1)
        return member
    if received > known:
        raise Refused(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one known by "
            f"the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
        )
    if received < known and received != member.previous_member_epoch:
        raise Refused(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one known by "
            f"the group coordinator ({known}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    return member


def _subscribed_names(
    group: ShareGroup, replacing: ShareMember | None = None, removed: str | None = None
) -> set[str]:
    """The group's subscribed topic names with one member's subscription replaced or removed."""
    names = {n for n, count in group.subscribed_topics.items() if count > 0}
    if replacing is not None or removed is not None:
        names = set()
        for member in group.members.values():
            if member.member_id not in (removed, getattr(replacing, "member_id", None)):
                names.update(member.subscribed_topic_names)
        if replacing is not None:
            names.update(replacing.subscribed_topic_names)
    return names


def _update_target(
    group: ShareGroup,
    epoch: int,
    updated: ShareMember,
    topics: TopicView,
    records: list[ShareRecord],
    now_ms: int,
) -> Assignment:
    """Kafka's updateTargetAssignment: run the simple assignor, write each changed member's target,
    then the target epoch; the updated member's target is returned."""
    members = {**group.members, updated.member_id: updated}
    subscriptions: dict[str, list[uuid.UUID]] = {}
    allowed: dict[uuid.UUID, frozenset[int]] = {}
    initialized = group.initialized_partitions()
    for member_id, member in members.items():
        ids = []
        for name in member.subscribed_topic_names:
            described = topics.describe(name)
            if described is not None:
                ids.append(described[0])
                allowed[described[0]] = frozenset(
                    p for p in initialized.get(described[0], ()) if p < described[1]
                )
        subscriptions[member_id] = ids
    new_target = assign(subscriptions, allowed, group.target)
    for member_id in sorted(new_target):
        if dict(new_target[member_id]) != dict(group.target_of(member_id)) or member_id not in group.target:
            records.append(ShareTargetMember(group.group_id, member_id, new_target[member_id]))
    records.append(ShareTargetEpoch(group.group_id, epoch, now_ms))
    return new_target.get(updated.member_id, {})


def plan_leave(group: ShareGroup, request: ShareHeartbeatRequest, topics: TopicView) -> ShareHeartbeatPlan:
    """Epoch -1: Kafka's shareGroupLeave (an unknown member is UNKNOWN_MEMBER_ID)."""
    if request.member_id not in group.members:
        raise Refused(
            ErrorCode.UNKNOWN_MEMBER_ID,
            f"Member {request.member_id} is not a member of group {group.group_id}.",
        )
    answer = ShareHeartbeatAnswer(ErrorCode.NONE, None, request.member_id, LEAVE_GROUP_MEMBER_EPOCH)
    return ShareHeartbeatPlan(fence_records(group, request.member_id, topics), answer, None)


def fence_records(group: ShareGroup, member_id: str, topics: TopicView) -> list[ShareRecord]:
    """Kafka's shareGroupFenceMember: removeMember's tombstones (current assignment, target,
    subscription), then the group epoch bumped, so the next heartbeat recomputes the target."""
    names: Iterable[str] = _subscribed_names(group, removed=member_id)
    return [
        ShareMemberAssignment(group.group_id, member_id, None),
        ShareTargetMember(group.group_id, member_id, None),
        ShareMemberSubscription(group.group_id, member_id, None),
        ShareGroupEpoch(group.group_id, group.group_epoch + 1, metadata_hash(names, topics)),
    ]
