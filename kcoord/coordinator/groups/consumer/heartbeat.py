"""ConsumerGroupHeartbeat (68): what one heartbeat of the consumer protocol (KIP-848) writes and
answers, computed against the group as it is, before anything changes (Kafka's
GroupMetadataManager.consumerGroupHeartbeat, consumerGroupLeave and consumerGroupFenceMember).

`plan_heartbeat` returns the records and the answer; the caller (service.py) applies the records
through the replay path and answers once they are durable. Errors are Kafka's ApiExceptions:
`Refused` carries the code and message to answer with, and nothing is written.

A heartbeat, in Kafka's order:
1. the member: created at epoch 0, else found and its epoch checked (fencing), static members
   replaced when their instance id was released (epoch -2);
2. its subscription: a member-metadata record when any of it changed; the group epoch is bumped
   when its topics (names or regex) changed or the subscribed topics' metadata did (a topic
   created, deleted or grown);
3. the target assignment, recomputed by the server assignor when the group epoch moved past it;
4. one reconciliation step of the member towards its target (reconcile.py).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kcoord.coordinator.groups.consumer.assignors import ASSIGNORS, MemberSpec
from kcoord.coordinator.groups.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from kcoord.coordinator.groups.consumer.reconcile import FencedMemberEpoch, Owned, next_assignment
from kcoord.coordinator.groups.consumer.records import (
    ConsumerGroupEpoch,
    ConsumerMemberAssignment,
    ConsumerMemberSubscription,
    ConsumerRecord,
    ConsumerTargetEpoch,
    ConsumerTargetMember,
)
from kcoord.coordinator.groups.consumer.topics import (
    Describable,
    TopicView,
    metadata_hash,
    regex_error,
    subscribed_names,
)
from kcoord.coordinator.groups.errors import ErrorCode

__all__ = [
    "HeartbeatAnswer",
    "HeartbeatPlan",
    "HeartbeatRequest",
    "Refused",
    "fence_records",
    "group_subscribed_names",
    "plan_heartbeat",
    "plan_leave",
    "remove_member_records",
    "subscribed_names_of",
    "update_member",
]

# KIP-1082: from v1 the client generates its member id (ConsumerGroupHeartbeatRequest
# CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION).
CLIENT_MEMBER_ID_SINCE = 1


class Refused(Exception):
    """Kafka's ApiException for this request: answer `code` with `message`, write nothing."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat typed at the door (broker/apis/consumer_group_heartbeat.py). None in
    the optional fields means 'unchanged since the last heartbeat', as on the wire."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int  # -1: unchanged
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None
    client_id: str
    client_host: str
    version: int
    # With an authorizer: may this heartbeat's principal DESCRIBE a topic? Filters what the group's
    # expressions match while this heartbeat resolves them, as Kafka resolves a group's regexes with
    # the context of the member whose heartbeat triggered the refresh (topics.py). None: no filter.
    describable: Describable | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged (not sent)


@dataclass(slots=True)
class HeartbeatPlan:
    records: list[ConsumerRecord]
    answer: HeartbeatAnswer
    member: ConsumerMember | None  # the member after the heartbeat (None once it left)
    replaced: str | None = None  # the static member this one replaced


def _blank(value: str | None) -> bool:
    """Java's `value.trim().isEmpty()` for a non-null value: nothing above U+0020 in it (an id
    that starts with a visible character is answered at once: every request asks four times)."""
    return value is not None and (not value or (value[0] <= " " and all(c <= " " for c in value)))


def validate(request: HeartbeatRequest, assignors: Sequence[str]) -> None:
    """Kafka's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid (4.x): the
    member id first (v1+, or a heartbeat or leave), then the group, instance and rack ids (blank
    counts as empty), what each epoch requires, the assignor. A regex is compiled only when a
    member's subscription changes to it (`_subscription_changed`)."""
    bad = ErrorCode.INVALID_REQUEST
    epoch = request.member_epoch
    if (
        request.version >= CLIENT_MEMBER_ID_SINCE or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH
    ) and _blank(request.member_id):
        raise Refused(bad, "MemberId can't be empty.")
    if _blank(request.group_id):
        raise Refused(bad, "GroupId can't be empty.")
    if _blank(request.instance_id):
        raise Refused(bad, "InstanceId can't be empty.")
    if _blank(request.rack_id):
        raise Refused(bad, "RackId can't be empty.")
    _validate_for_epoch(request)
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise Refused(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )


def _validate_for_epoch(request: HeartbeatRequest) -> None:
    bad, epoch = ErrorCode.INVALID_REQUEST, request.member_epoch
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise Refused(bad, "RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or len(request.owned) != 0:
            raise Refused(bad, "TopicPartitions must be empty when (re-)joining.")
        # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid: null only, an empty
        # subscription joins (and is assigned nothing).
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise Refused(
                bad, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise Refused(bad, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise Refused(bad, "MemberEpoch is invalid.")


# -- joining and heartbeating -----------------------------------------------------------------------
def plan_heartbeat(
    group: ConsumerGroup,
    request: HeartbeatRequest,
    topics: TopicView,
    *,
    default_assignor: str,
    max_size: int | None,
    heartbeat_interval_ms: int,
) -> HeartbeatPlan:
    """A heartbeat with epoch >= 0 (join, rejoin or heartbeat); `group` may be new and empty."""
    member_id = request.member_id or _kafka_uuid()  # v0: the coordinator names the member
    if max_size is not None and len(group.members) >= max_size and member_id not in group.members:
        raise Refused(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {max_size} members.",
        )
    records: list[ConsumerRecord] = []
    member, replaced = _current_member(group, request, member_id, records)
    updated = _with_request(member, request)
    reconciled = update_member(
        group,
        member,
        updated,
        replaced,
        request.owned,
        topics,
        default_assignor,
        records,
        request.describable,
    )
    full = request.member_epoch == 0 or (
        request.rebalance_timeout_ms != -1
        and request.subscribed_topic_names is not None
        and request.owned is not None
    )
    changed = reconciled.assigned != member.assigned
    answer = HeartbeatAnswer(
        ErrorCode.NONE,
        None,
        member_id,
        reconciled.member_epoch,
        heartbeat_interval_ms,
        reconciled.assigned if full or changed else None,
    )
    return HeartbeatPlan(records, answer, reconciled, replaced)


def _kafka_uuid() -> str:
    """A random id as Kafka's Uuid.toString writes it: 16 bytes in URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def update_member(
    group: ConsumerGroup,
    member: ConsumerMember,
    updated: ConsumerMember,
    replaced: str | None,
    owned: Owned,
    topics: TopicView,
    default_assignor: str,
    records: list[ConsumerRecord],
    describable: Describable | None = None,
) -> ConsumerMember:
    """Steps 2-4 of a heartbeat, shared with a classic member's JoinGroup (online migration):
    the subscription record and epoch bump, the target, one reconciliation step. The member after.
    Regexes resolve to the topics `describable` allows (all without it)."""
    bump = _subscription_changed(group.group_id, member, updated, records)
    group_epoch = group.group_epoch
    if bump or group.checked_topics_version != topics.version:
        # The subscribed topics' metadata is checked when the subscriptions changed or any topic
        # did since the last check (Kafka: on a subscription change or a new metadata image).
        names = group_subscribed_names(group, topics, updated, replaced, describable)
        new_hash = metadata_hash(names, topics)
        if bump or new_hash != group.metadata_hash:
            group_epoch += 1
            records.append(ConsumerGroupEpoch(group.group_id, group_epoch, new_hash))
    if group_epoch > group.assignment_epoch:
        target = _update_target(
            group, group_epoch, updated, replaced, topics, default_assignor, records, describable
        )
        target_epoch = group_epoch
    else:
        target = group.target_of(updated.member_id)
        target_epoch = group.assignment_epoch
    if updated.is_reconciled_to(target_epoch):
        return updated
    try:
        reconciled = next_assignment(updated, target_epoch, target, group.current_partition_epoch, owned)
    except FencedMemberEpoch as exc:
        raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from None
    if reconciled.current_assignment() != updated.current_assignment():
        records.append(ConsumerMemberAssignment(group.group_id, updated.member_id, reconciled))
    return reconciled


def _current_member(
    group: ConsumerGroup, request: HeartbeatRequest, member_id: str, records: list[ConsumerRecord]
) -> tuple[ConsumerMember, str | None]:
    """The member as it is (a fresh one when joining), and the static member it replaces."""
    epoch = request.member_epoch
    if request.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            return ConsumerMember(member_id), None
        if epoch == 0:
            # A known member id at epoch 0 rejoins afresh, owning nothing (accepted since Kafka 4.2,
            # where earlier versions fenced it): its partitions are released by its new assignment.
            return ConsumerMember(member_id), None
        _check_epoch(member, epoch, request.owned)
        return member, None
    return _static_member(group, request, member_id, records)


def _static_member(
    group: ConsumerGroup, request: HeartbeatRequest, member_id: str, records: list[ConsumerRecord]
) -> tuple[ConsumerMember, str | None]:
    """Kafka's getOrMaybeSubscribeStaticConsumerGroupMember."""
    instance_id = request.instance_id
    assert instance_id is not None
    existing_id = group.static_members.get(instance_id)
    existing = group.members.get(existing_id) if existing_id is not None else None
    if request.member_epoch == 0:
        if existing is None:
            return ConsumerMember(member_id), None
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise Refused(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} cannot join the group "
                f"because the instance id is owned by {existing.member_id} member.",
            )
        # The new member takes over the departed one's assignment and epochs, not its subscription
        # (Kafka's Builder.setAssignmentFrom and replaceMember): the old member's records are
        # tombstoned and the new one's written in their place.
        new = ConsumerMember(
            member_id,
            member_epoch=existing.member_epoch,
            previous_member_epoch=existing.previous_member_epoch,
            state=existing.state,
            assigned=existing.assigned,
            pending_revocation=existing.pending_revocation,
        )
        remove_member_records(group.group_id, existing.member_id, records)
        records.append(ConsumerMemberSubscription(group.group_id, member_id, new))
        records.append(
            ConsumerTargetMember(group.group_id, member_id, dict(group.target_of(existing.member_id)))
        )
        records.append(ConsumerMemberAssignment(group.group_id, member_id, new))
        return new, existing.member_id
    if existing is None:
        raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise Refused(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} "
            f"was fenced by member {existing.member_id}.",
        )
    _check_epoch(existing, request.member_epoch, request.owned)
    return existing, None


def _check_epoch(member: ConsumerMember, received: int, owned: Owned) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a newer epoch than ours, or an older one
    that is not the previous epoch with owned partitions within the current assignment (a lost
    response), fences the member."""
    if received > member.member_epoch or (
        received < member.member_epoch
        and (received != member.previous_member_epoch or not _is_subset(owned, member.assigned))
    ):
        raise Refused(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a {'greater' if received > member.member_epoch else 'smaller'} "
            f"member epoch ({received}) than the one known by the group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )


def _is_subset(owned: Owned, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(topic_id, ()) for topic_id, partitions in owned for p in partitions)


def _with_request(member: ConsumerMember, request: HeartbeatRequest) -> ConsumerMember:
    """Kafka's ConsumerGroupMember.Builder.maybeUpdate*: a null field keeps the member's value."""
    if (
        request.subscribed_topic_names is None
        and request.subscribed_topic_regex is None
        and request.rebalance_timeout_ms == -1
        and request.instance_id is None
        and request.rack_id is None
        and request.server_assignor is None
        and request.client_id == member.client_id
        and request.client_host == member.client_host
    ):
        return member  # a steady heartbeat changes nothing: no copy (dataclasses.replace is slow)
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms
        ),
        server_assignor=request.server_assignor
        if request.server_assignor is not None
        else member.server_assignor,
        subscribed_topic_names=(
            request.subscribed_topic_names
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        subscribed_topic_regex=(
            request.subscribed_topic_regex
            if request.subscribed_topic_regex is not None
            else member.subscribed_topic_regex
        ),
        client_id=request.client_id,
        client_host=request.client_host,
    )


def _subscription_changed(
    group_id: str, member: ConsumerMember, updated: ConsumerMember, records: list[ConsumerRecord]
) -> bool:
    """Kafka's hasMemberSubscriptionChanged: a record when any of it changed; True (bump the group
    epoch) when the topics it subscribes to by name or expression did. A member that is new to the
    group always has a record written."""
    if member.member_epoch != 0 and (updated is member or updated.subscription() == member.subscription()):
        return False
    regex = updated.subscribed_topic_regex
    if regex is not None and regex != member.subscribed_topic_regex and (problem := regex_error(regex)):
        # Utils.throwIfRegularExpressionIsInvalid, when the member subscribes to a new expression
        raise Refused(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {problem}.",
        )
    records.append(ConsumerMemberSubscription(group_id, updated.member_id, updated))
    # hasMemberSubscriptionChanged compares the names as sets; maybeUpdateRegularExpressions bumps for
    # a changed expression ("" and null alike: a member's starts at ""). A new member that subscribes
    # to nothing leaves the epoch alone.
    return set(updated.subscribed_topic_names) != set(member.subscribed_topic_names) or (
        updated.subscribed_topic_regex or ""
    ) != (member.subscribed_topic_regex or "")


def group_subscribed_names(
    group: ConsumerGroup,
    topics: TopicView,
    updated: ConsumerMember | None = None,
    removed: str | None = None,
    describable: Describable | None = None,
) -> set[str]:
    """Every topic the group's members subscribe to, with `updated` in place of its old self and
    `removed` left out."""
    members = dict(group.members)
    if removed is not None:
        members.pop(removed, None)
    if updated is not None:
        members[updated.member_id] = updated
    return subscribed_names_of(members.values(), topics, describable)


def subscribed_names_of(
    members: Iterable[ConsumerMember], topics: TopicView, describable: Describable | None = None
) -> set[str]:
    """Every topic these members subscribe to, by name or expression (its matches that
    `describable` allows)."""
    names: set[str] = set()
    regexes: set[str] = set()
    for m in members:
        names.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            regexes.add(m.subscribed_topic_regex)
    for regex in regexes:
        names |= subscribed_names((), regex, topics, describable)
    return names


def _update_target(
    group: ConsumerGroup,
    group_epoch: int,
    updated: ConsumerMember,
    replaced: str | None,
    topics: TopicView,
    default_assignor: str,
    records: list[ConsumerRecord],
    describable: Describable | None,
) -> Assignment:
    """Kafka's updateTargetAssignment / TargetAssignmentBuilder: run the preferred assignor over
    every member (with `updated` in, the static member it replaced out) and write the target of each
    member whose target changed, then the target's epoch."""
    members = dict(group.members)
    if replaced is not None:
        members.pop(replaced, None)
    members[updated.member_id] = updated
    assignor = _preferred_assignor(members.values(), default_assignor)
    specs: dict[str, MemberSpec] = {}
    partitions: dict[uuid.UUID, int] = {}
    for member_id, member in members.items():
        subscribed: set[uuid.UUID] = set()
        regex = member.subscribed_topic_regex
        for name in subscribed_names(member.subscribed_topic_names, regex, topics, describable):
            described = topics.describe(name)
            if described is not None:
                subscribed.add(described[0])
                partitions[described[0]] = described[1]
        current = group.target_of(replaced if member_id == updated.member_id and replaced else member_id)
        specs[member_id] = MemberSpec(frozenset(subscribed), current)
    result = ASSIGNORS[assignor](specs, partitions)
    new_target: Assignment = {}
    for member_id in sorted(members):
        assignment = {t: frozenset(ps) for t, ps in result.get(member_id, {}).items() if ps}
        old = group.target_of(member_id)
        if assignment != old:
            records.append(ConsumerTargetMember(group.group_id, member_id, assignment))
        if member_id == updated.member_id:
            new_target = assignment
    records.append(ConsumerTargetEpoch(group.group_id, group_epoch))
    return new_target


def _preferred_assignor(members: Iterable[ConsumerMember], default: str) -> str:
    """Kafka's computePreferredServerAssignor: the assignor most members name, else the default;
    ties go to the alphabetically first name, so replay and live agree."""
    counts: dict[str, int] = {}
    for member in members:
        if member.server_assignor is not None:
            counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
    if not counts:
        return default
    return min(counts, key=lambda name: (-counts[name], name))


# -- leaving and fencing ----------------------------------------------------------------------------
def plan_leave(group: ConsumerGroup | None, request: HeartbeatRequest, topics: TopicView) -> HeartbeatPlan:
    """Epoch -1 (leave) or -2 (a static member leaves for a while): Kafka's consumerGroupLeave."""
    if group is None:  # GroupMetadataManager.consumerGroupLeave looks it up with group(groupId)
        raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    answer = HeartbeatAnswer(ErrorCode.NONE, None, request.member_id, request.member_epoch)
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise Refused(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {group.group_id}.",
            )
        return HeartbeatPlan(fence_records(group, member.member_id, topics), answer, None)
    member_id = group.static_members.get(request.instance_id)
    member = group.members.get(member_id) if member_id is not None else None
    if member is None:
        raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
    if member.member_id != request.member_id:
        raise Refused(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {request.member_id} with instance id {request.instance_id} "
            f"was fenced by member {member.member_id}.",
        )
    if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        # Kept with its assignment at epoch -2, so a restarted instance takes it over
        # (consumerGroupStaticMemberGroupLeave).
        leaving = replace(
            member,
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            previous_member_epoch=member.member_epoch,
            pending_revocation={},
            state=MemberState.STABLE,
        )
        records: list[ConsumerRecord] = [ConsumerMemberAssignment(group.group_id, member.member_id, leaving)]
        return HeartbeatPlan(records, answer, leaving)
    return HeartbeatPlan(fence_records(group, member.member_id, topics), answer, None)


def remove_member_records(group_id: str, member_id: str, records: list[ConsumerRecord]) -> None:
    """Kafka's removeMember: tombstones of the current assignment, the target, the subscription."""
    records.append(ConsumerMemberAssignment(group_id, member_id, None))
    records.append(ConsumerTargetMember(group_id, member_id, None))
    records.append(ConsumerMemberSubscription(group_id, member_id, None))


def fence_records(group: ConsumerGroup, member_id: str, topics: TopicView) -> list[ConsumerRecord]:
    """Kafka's consumerGroupFenceMember: remove the member and bump the group epoch (the target is
    recomputed at the next heartbeat of any member)."""
    records: list[ConsumerRecord] = []
    remove_member_records(group.group_id, member_id, records)
    names = group_subscribed_names(group, topics, removed=member_id)
    records.append(ConsumerGroupEpoch(group.group_id, group.group_epoch + 1, metadata_hash(names, topics)))
    return records
