"""Properties of the server-side assignors (KIP-848 `uniform` and `range`), with Hypothesis."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.coordinator.groups.consumer.assignors import MemberSpec, range_assign, uniform_assign

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]

partition_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1)
member_ids = st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=8, unique=True)


@st.composite
def groups(draw: Any, homogeneous: bool | None = None) -> tuple[dict[str, MemberSpec], dict[uuid.UUID, int]]:
    partitions = draw(partition_counts)
    ids = draw(member_ids)
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    common = frozenset(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)))
    members = {}
    for member_id in ids:
        subscribed = (
            common if same else frozenset(draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True)))
        )
        current = {
            t: frozenset(draw(st.lists(st.integers(0, 14), max_size=4)))
            for t in draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=3))
        }  # stale, foreign and duplicated ownership included
        members[member_id] = MemberSpec(subscribed, current)
    return members, partitions


def _flat(assignment: dict[str, dict[Any, set[int]]]) -> Counter[tuple[str, Any, int]]:
    return Counter((m, t, p) for m, topics in assignment.items() for t, ps in topics.items() for p in ps)


def _check_valid(members: dict[str, MemberSpec], partitions: dict[uuid.UUID, int], result: Any) -> None:
    owners = Counter((t, p) for _, t, p in _flat(result))
    subscribed = {t for spec in members.values() for t in spec.subscribed if t in partitions}
    wanted = {(t, p) for t in subscribed for p in range(partitions[t])}
    assert set(owners) == wanted and all(n == 1 for n in owners.values())  # each exactly once
    for member_id, topics in result.items():
        assert set(topics) <= members[member_id].subscribed


def _counts(result: Any) -> list[int]:
    return [sum(len(ps) for ps in topics.values()) for topics in result.values()]


def _as_current(members: dict[str, MemberSpec], result: Any) -> dict[str, MemberSpec]:
    return {
        m: MemberSpec(spec.subscribed, {t: frozenset(ps) for t, ps in result.get(m, {}).items()})
        for m, spec in members.items()
    }


@settings(max_examples=300, deadline=None)
@given(groups())
def test_uniform_assigns_every_subscribed_partition_once_to_a_subscriber(group: Any) -> None:
    members, partitions = group
    _check_valid(members, partitions, uniform_assign(members, partitions))


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_is_balanced_within_one(group: Any) -> None:
    members, partitions = group
    counts = _counts(uniform_assign(members, partitions))
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_leaves_no_move_that_improves_balance(group: Any) -> None:
    members, partitions = group
    result = uniform_assign(members, partitions)
    load = {m: sum(len(ps) for ps in topics.values()) for m, topics in result.items()}
    for member_id, topics in result.items():
        for topic, ps in topics.items():
            if ps:
                for other, spec in members.items():
                    assert not (topic in spec.subscribed and load[other] + 1 < load[member_id])


@settings(max_examples=300, deadline=None)
@given(groups(), st.randoms(use_true_random=False))
def test_assignors_are_deterministic_whatever_the_input_order(group: Any, rnd: random.Random) -> None:
    members, partitions = group
    shuffled_ids = list(members)
    rnd.shuffle(shuffled_ids)
    topic_order = list(partitions)
    rnd.shuffle(topic_order)
    members2 = {m: members[m] for m in shuffled_ids}
    partitions2 = {t: partitions[t] for t in topic_order}
    for assign in (uniform_assign, range_assign):
        assert assign(members, partitions) == assign(members2, partitions2)


@settings(max_examples=300, deadline=None)
@given(groups())
def test_uniform_is_sticky_when_nothing_changes(group: Any) -> None:
    members, partitions = group
    first = uniform_assign(members, partitions)
    assert uniform_assign(_as_current(members, first), partitions) == first


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_join_moves_only_what_the_new_member_gets(group: Any) -> None:
    members, partitions = group
    stable = _as_current(members, uniform_assign(members, partitions))
    spec = next(iter(members.values()))
    joined = {**stable, "zz-new": MemberSpec(spec.subscribed, {})}
    after = uniform_assign(joined, partitions)
    _check_valid(joined, partitions, after)
    before_flat, after_flat = _flat(uniform_assign(stable, partitions)), _flat(after)
    moved = [(m, t, p) for m, t, p in after_flat if m != "zz-new" and (m, t, p) not in before_flat]
    assert moved == []  # existing members only give partitions away, all of them to the newcomer
    given_away = sum(1 for key in before_flat if key not in after_flat)
    assert given_away == sum(len(ps) for ps in after["zz-new"].values())


@settings(max_examples=300, deadline=None)
@given(groups())
def test_range_assigns_consecutive_ranges_and_keeps_co_partitioned_topics_aligned(group: Any) -> None:
    members, partitions = group
    result = range_assign(members, partitions)
    _check_valid(members, partitions, result)
    for topics in result.values():
        for ps in topics.values():
            assert sorted(ps) == list(range(min(ps), max(ps) + 1))
    for a in partitions:
        for b in partitions:
            same_subscribers = {m for m, s in members.items() if a in s.subscribed} == {
                m for m, s in members.items() if b in s.subscribed
            }
            if a != b and partitions[a] == partitions[b] and same_subscribers:
                for topics in result.values():
                    assert topics.get(a, set()) == topics.get(b, set())
