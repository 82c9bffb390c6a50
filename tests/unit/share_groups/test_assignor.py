"""The `simple` share assignor's properties (SimpleAssignor's principles: balance, then stickiness),
checked by Hypothesis over homogeneous and heterogeneous groups."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kcoord.coordinator.groups.share.assignor import assign

TOPICS = [uuid.UUID(int=i + 1) for i in range(3)]


@st.composite
def groups(
    draw: st.DrawFn, homogeneous: bool
) -> tuple[dict[str, list[uuid.UUID]], dict[uuid.UUID, frozenset[int]]]:
    counts = {t: frozenset(range(draw(st.integers(0, 6)))) for t in TOPICS}
    members = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=8, unique=True))
    if homogeneous:
        topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
        return {m: list(topics) for m in members}, counts
    return {m: draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)) for m in members}, counts


@given(groups(homogeneous=True))
def test_homogeneous_balance_and_full_coverage(
    group: tuple[dict[str, list[uuid.UUID]], dict[uuid.UUID, frozenset[int]]],
) -> None:
    subscriptions, partitions = group
    target = assign(subscriptions, partitions, {})
    wanted = {(t, p) for t in next(iter(subscriptions.values())) for p in partitions[t]}
    holders: dict[tuple[uuid.UUID, int], int] = {}
    for assignment in target.values():
        for t, ps in assignment.items():
            for p in ps:
                holders[t, p] = holders.get((t, p), 0) + 1
    assert set(holders) == wanted  # every assignable partition, nothing else
    if wanted:
        sharing = -(-len(subscriptions) // len(wanted))  # ceil(members / partitions)
        assert set(holders.values()) == {sharing}
        sizes = [sum(len(ps) for ps in a.values()) for a in target.values()]
        assert max(sizes) - min(sizes) <= 1  # balance within one partition
        assert min(sizes) >= 1  # nobody idles while partitions exist


@given(groups(homogeneous=False))
def test_heterogeneous_members_get_only_their_topics_and_every_partition_is_taken(
    group: tuple[dict[str, list[uuid.UUID]], dict[uuid.UUID, frozenset[int]]],
) -> None:
    subscriptions, partitions = group
    target = assign(subscriptions, partitions, {})
    for member, assignment in target.items():
        assert set(assignment) <= set(subscriptions[member])
    subscribed = {t for ts in subscriptions.values() for t in ts}
    taken = {(t, p) for a in target.values() for t, ps in a.items() for p in ps}
    assert taken == {(t, p) for t in subscribed for p in partitions[t]}


@given(groups(homogeneous=True))
def test_sticky_and_stable(group: tuple[dict[str, list[uuid.UUID]], dict[uuid.UUID, frozenset[int]]]) -> None:
    subscriptions, partitions = group
    first = assign(subscriptions, partitions, {})
    assert assign(subscriptions, partitions, first) == first  # a balanced target stays as it is
    assert assign(dict(reversed(list(subscriptions.items()))), partitions, {}) == first  # order-free


@given(groups(homogeneous=True), st.text("xyz", min_size=4, max_size=4))
def test_a_join_only_takes_partitions_from_others(
    group: tuple[dict[str, list[uuid.UUID]], dict[uuid.UUID, frozenset[int]]], newcomer: str
) -> None:
    subscriptions, partitions = group
    before = assign(subscriptions, partitions, {})
    after = assign({**subscriptions, newcomer: next(iter(subscriptions.values()))}, partitions, before)
    wanted = sum(len(partitions[t]) for t in next(iter(subscriptions.values())))
    if len(subscriptions) + 1 <= wanted:  # no sharing before or after: each member only gives up
        for member, assignment in before.items():
            for t, ps in after[member].items():
                assert ps <= assignment.get(t, frozenset())
