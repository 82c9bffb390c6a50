"""Server-side assignors of the consumer protocol (KIP-848): `uniform` and `range`, pure functions.

Kafka's group coordinator computes a consumer group's target assignment itself, with the assignor
the members name (`ServerAssignor`) or the configured default. Its two assignors, as specified by
apache/kafka group-coordinator `assignor/UniformAssignor` (with `OptimizedUniformAssignmentBuilder`
for homogeneous subscriptions and `GeneralUniformAssignmentBuilder` for heterogeneous ones) and
`assignor/RangeAssignor`:

* `uniform`: balanced, then sticky. With homogeneous subscriptions every member ends within one
  partition of every other (over all topics together), and a partition moves only if balance needs
  it: a member keeps its current partitions up to its quota. With heterogeneous subscriptions each
  partition goes to one of its topic's subscribers, and partitions move from a member to a less
  loaded subscriber only while that reduces the imbalance (no single move can improve it after).
* `range`: per topic, the subscribers sorted by member id get consecutive ranges (the first
  `partitions % members` get one more), so members subscribed to co-partitioned topics get the same
  partition numbers in each (joins stay local); a member keeps a partition it owns when that partition
  falls in its range, which a stable membership always does.

Both are deterministic: the result depends on the members, their subscriptions and current
partitions and the topics' partition counts, never on the order they are given in. Topics are keyed
by id (`uuid.UUID` in the group logic; anything sortable here).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ASSIGNORS", "Assignment", "MemberSpec", "range_assign", "uniform_assign"]

TopicId = Any  # sortable and hashable: uuid.UUID in the group logic
Assignment = dict[str, dict[TopicId, set[int]]]


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member: the topics it subscribes to, the partitions it owns now."""

    subscribed: frozenset[TopicId]
    current: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)


def uniform_assign(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> Assignment:
    if not members:
        return {}
    subscriptions = {frozenset(spec.subscribed & partitions.keys()) for spec in members.values()}
    if len(subscriptions) == 1:
        return _uniform_homogeneous(members, sorted(subscriptions.pop(), key=_key), partitions)
    return _uniform_general(members, partitions)


def _key(value: Hashable) -> Any:
    return str(value)


TopicPartition = tuple[TopicId, int]


def _claim_current(
    members: Mapping[str, MemberSpec], ids: list[str], allowed: Callable[[str, TopicPartition], bool]
) -> tuple[dict[TopicPartition, str], dict[str, list[TopicPartition]]]:
    """Sticky start: each member keeps the current partitions it may still own (first claim, in member
    id order, wins a partition two members report)."""
    owner: dict[TopicPartition, str] = {}
    kept: dict[str, list[TopicPartition]] = {}
    for member_id in ids:
        current = members[member_id].current
        mine = []
        for topic in sorted(current, key=_key):
            for p in sorted(current[topic]):
                if (topic, p) not in owner and allowed(member_id, (topic, p)):
                    owner[(topic, p)] = member_id
                    mine.append((topic, p))
        kept[member_id] = mine
    return owner, kept


def _uniform_homogeneous(
    members: Mapping[str, MemberSpec], topics: list[TopicId], partitions: Mapping[TopicId, int]
) -> Assignment:
    ids = sorted(members)
    every = [(t, p) for t in topics for p in range(partitions[t])]
    quota, extra = divmod(len(every), len(ids))
    valid = set(every)
    owner, kept = _claim_current(members, ids, lambda _m, tp: tp in valid)
    for tp in _trim(kept, ids, quota, extra):
        del owner[tp]
    free = [tp for tp in every if tp not in owner]
    free.reverse()  # pop() from the end: lowest topic and partition first
    for member_id in ids:  # everyone up to the quota
        while len(kept[member_id]) < quota:
            kept[member_id].append(free.pop())
    for member_id in ids:  # the remainder: one more for members still at the quota, in id order
        if not free:
            break
        if len(kept[member_id]) == quota:
            kept[member_id].append(free.pop())
    assert not free
    return {m: _grouped(kept[m]) for m in ids}


def _trim(
    kept: dict[str, list[TopicPartition]], ids: list[str], quota: int, extra: int
) -> list[TopicPartition]:
    """Cut every member to quota + 1, then let only the first `extra` of those at quota + 1 keep it;
    the partitions released."""
    released: list[TopicPartition] = []
    for member_id in ids:
        mine = kept[member_id]
        released += mine[quota + 1 :]
        del mine[quota + 1 :]
    over = [m for m in ids if len(kept[m]) == quota + 1]
    for member_id in over[extra:]:
        released.append(kept[member_id].pop())
    return released


def _uniform_general(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> Assignment:
    ids = sorted(members)
    subscribers: dict[TopicId, list[str]] = {}
    for member_id in ids:
        for topic in members[member_id].subscribed & partitions.keys():
            subscribers.setdefault(topic, []).append(member_id)

    def allowed(member_id: str, tp: TopicPartition) -> bool:
        topic, p = tp
        return topic in members[member_id].subscribed and topic in partitions and p < partitions[topic]

    owner, kept = _claim_current(members, ids, allowed)
    owned = {m: set(kept[m]) for m in ids}
    # Unowned partitions, topics with the fewest subscribers first: each to its least-loaded subscriber.
    for topic in sorted(subscribers, key=lambda t: (len(subscribers[t]), _key(t))):
        for p in range(partitions[topic]):
            if (topic, p) not in owner:
                target = min(subscribers[topic], key=lambda m: (len(owned[m]), m))
                owner[(topic, p)] = target
                owned[target].add((topic, p))
    _balance(owned, owner, subscribers)
    return {m: _grouped(owned[m]) for m in ids}


def _balance(
    owned: dict[str, set[TopicPartition]],
    owner: dict[TopicPartition, str],
    subscribers: Mapping[TopicId, list[str]],
) -> None:
    """Move a partition from a member to a subscriber with at least two fewer, most loaded first,
    until no such move exists: each move lowers the sum of squared loads, so this ends."""
    while True:
        moved = False
        for member_id in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            load = len(owned[member_id])
            best: tuple[int, str, tuple[TopicId, int]] | None = None
            for tp in sorted(owned[member_id], key=lambda x: (_key(x[0]), x[1])):
                for other in subscribers[tp[0]]:
                    other_load = len(owned[other])
                    if other_load + 1 < load and (best is None or (other_load, other) < best[:2]):
                        best = (other_load, other, tp)
            if best is not None:
                _, other, tp = best
                owned[member_id].discard(tp)
                owned[other].add(tp)
                owner[tp] = other
                moved = True
                break
        if not moved:
            return


def range_assign(members: Mapping[str, MemberSpec], partitions: Mapping[TopicId, int]) -> Assignment:
    out: Assignment = {m: {} for m in sorted(members)}
    for topic in sorted(partitions, key=_key):
        subscribed = sorted(m for m, spec in members.items() if topic in spec.subscribed)
        if not subscribed:
            continue
        quota, extra = divmod(partitions[topic], len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = quota + (1 if index < extra else 0)
            if size:
                out[member_id][topic] = set(range(start, start + size))
            start += size
    return out


def _grouped(tps: Any) -> dict[TopicId, set[int]]:
    out: dict[TopicId, set[int]] = {}
    for topic, p in tps:
        out.setdefault(topic, set()).add(p)
    return out


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}  # Kafka's names (ServerAssignor)
