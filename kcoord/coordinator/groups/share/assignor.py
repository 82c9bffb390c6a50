"""The `simple` share group assignor (Kafka's group-coordinator assignor/SimpleAssignor.java with
SimpleHomogeneousAssignmentBuilder / SimpleHeterogeneousAssignmentBuilder).

Its principles, as Kafka states them: balance first (every partition shared by the same number of
members, `ceil(members / partitions)`, and assignment sizes differing by at most one), then
stickiness (a member keeps what it has while that stays balanced). Kafka walks Java hash maps, so
which member gets which partition is its own; kcoord walks members and partitions in sorted order,
so an assignment is deterministic and a replay agrees (docs/compat.md). Heterogeneous groups are
assigned topic by topic among the members subscribed to each topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence

from kcoord.coordinator.groups.consumer.model import Assignment, assignment_of

__all__ = ["SIMPLE_ASSIGNOR", "assign"]

SIMPLE_ASSIGNOR = "simple"  # ShareGroupConfig's group.share.assignors default, as described
TopicPartition = tuple[uuid.UUID, int]


def assign(
    subscriptions: Mapping[str, Sequence[uuid.UUID]],
    partitions: Mapping[uuid.UUID, Collection[int]],
    current: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """The target assignment of every member: `subscriptions` are each member's subscribed topic
    ids (existing topics only), `partitions` each topic's assignable partitions (Kafka's
    SubscribedTopicDescriberImpl with the share group's initialized partitions: a partition whose
    share state is not initialized yet is assigned to nobody), `current` each member's target now
    (for stickiness)."""
    members = sorted(subscriptions)
    out: dict[str, list[TopicPartition]] = {m: [] for m in members}
    # Group members by identical subscription: one homogeneous pass per topic set, Kafka's
    # homogeneous builder for the common case where every member subscribes the same topics.
    by_topics: dict[frozenset[uuid.UUID], list[str]] = {}
    for member in members:
        topics = frozenset(t for t in subscriptions[member] if partitions.get(t))
        if topics:
            by_topics.setdefault(topics, []).append(member)
    if len(by_topics) == 1:
        ((topics, group),) = by_topics.items()
        _assign_homogeneous(group, _partitions_of(topics, partitions), current, out)
    else:
        for topic in sorted({t for ts in by_topics for t in ts}, key=str):
            subscribers = [m for ts, ms in by_topics.items() if topic in ts for m in ms]
            _assign_homogeneous(sorted(subscribers), _partitions_of({topic}, partitions), current, out)
    return {m: assignment_of((t, [p]) for t, p in tps) for m, tps in out.items()}


def _partitions_of(
    topics: frozenset[uuid.UUID] | set[uuid.UUID], allowed: Mapping[uuid.UUID, Collection[int]]
) -> list[TopicPartition]:
    return [(t, p) for t in sorted(topics, key=str) for p in sorted(allowed[t])]


def _quotas(
    members: Sequence[str], sharing: int, targets: Sequence[TopicPartition], current: Mapping[str, Assignment]
) -> dict[str, int]:
    """SimpleHomogeneousAssignmentBuilder's desiredAssignmentCount: sharing * partitions slots
    spread over the members, the counts differing by at most one. Kafka hands the larger counts out
    in hash-map order; here they go to the members holding the most of these partitions now, so a
    member never has to take a partition it did not have only because another one joined."""
    precise = sharing * len(targets) / len(members)
    counts = sorted(
        (_ceil(precise * (i + 1)) - _ceil(precise * i) for i in range(len(members))), reverse=True
    )
    wanted = set(targets)
    held = {m: sum(1 for tp in _sorted_partitions(current.get(m, {})) if tp in wanted) for m in members}
    order = sorted(range(len(members)), key=lambda i: (-held[members[i]], i))
    return {members[i]: count for i, count in zip(order, counts, strict=True)}


def _ceil(value: float) -> int:
    whole = int(value)
    return whole + 1 if value > whole + 1e-9 else whole


def _sorted_partitions(assignment: Assignment) -> list[TopicPartition]:
    return [(t, p) for t, ps in sorted(assignment.items(), key=lambda i: str(i[0])) for p in sorted(ps)]


def _assign_homogeneous(
    members: Sequence[str],
    targets: Sequence[TopicPartition],
    current: Mapping[str, Assignment],
    out: dict[str, list[TopicPartition]],
) -> None:
    """One homogeneous pass: keep current partitions within the quotas and the sharing, then fill
    the partitions shared too little, each by the least-filled member below its quota."""
    if not members or not targets:
        return
    sharing = (len(members) + len(targets) - 1) // len(targets)
    quota = _quotas(members, sharing, targets, current)
    holders: dict[TopicPartition, list[str]] = {tp: [] for tp in targets}
    taken = dict.fromkeys(members, 0)
    for member in members:  # stickiness: what the member had, while balanced
        for tp in _sorted_partitions(current.get(member, {})):
            if tp in holders and taken[member] < quota[member] and len(holders[tp]) < sharing:
                holders[tp].append(member)
                taken[member] += 1
    for tp in targets:  # round the partitions shared too little (assignRemainingPartitions)
        while len(holders[tp]) < sharing:
            free = [m for m in members if taken[m] < quota[m] and m not in holders[tp]]
            if not free:
                break
            chosen = min(free, key=lambda m: (taken[m], members.index(m)))
            holders[tp].append(chosen)
            taken[chosen] += 1
    for tp, assigned in holders.items():
        for member in assigned:
            out[member].append(tp)
