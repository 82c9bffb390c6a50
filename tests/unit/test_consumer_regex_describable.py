"""A subscription regex resolves only to the topics the heartbeat's principal may DESCRIBE (Kafka 4.0+,
KAFKA-18813: GroupMetadataManager.refreshRegularExpressions / filterTopicDescribeAuthorizedTopics).
The group logic takes the authorizer's decision as a plain callable; here the decisions are sets."""

from __future__ import annotations

import uuid

import pytest

from kcoord.coordinator.groups.consumer.heartbeat import HeartbeatAnswer, HeartbeatRequest
from kcoord.coordinator.groups.consumer.topics import Describable, subscribed_names
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.responses import JoinAnswer
from tests.unit.test_consumer_heartbeat import T1, T2, Answer, Cluster, FakeTopics
from tests.unit.test_consumer_migration import subscription

T3 = uuid.UUID(int=3)


def _only(*allowed: str) -> Describable:
    return frozenset(allowed).__contains__


def _join(
    c: Cluster,
    member_id: str,
    *,
    regex: str | None,
    names: tuple[str, ...] = (),
    describable: Describable | None,
) -> HeartbeatAnswer:
    answer = Answer()
    request = HeartbeatRequest(
        "g", member_id, 0, None, None, 30_000, names, regex, None, (), "client", "/127.0.0.1", 1,
        describable=describable,
    )  # fmt: skip
    c.mgr.consumer.heartbeat(request, answer)
    return answer.value


def _topics() -> FakeTopics:
    topics = FakeTopics()
    for name, topic_id in (("rx-a", T1), ("rx-b", T2), ("other", T3)):
        topics.set(name, topic_id, 1)
    return topics


def test_the_matches_are_filtered_by_describable_and_the_names_are_not() -> None:
    topics = _topics()
    assert subscribed_names((), "rx-.*", topics) == {"rx-a", "rx-b"}  # no authorizer: no filter
    assert subscribed_names((), "rx-.*", topics, _only("rx-a", "other")) == {"rx-a"}
    assert subscribed_names((), "rx-.*", topics, _only()) == set()
    # names were checked by the server (TOPIC_AUTHORIZATION_FAILED for the request): kept as given
    assert subscribed_names(("other",), "rx-.*", topics, _only("rx-b")) == {"other", "rx-b"}


def test_a_regex_subscriber_is_assigned_only_what_it_may_describe() -> None:
    c = Cluster()
    joined = _join(c, "m1", regex="t.*", describable=_only("t2"))
    assert joined.assignment == {T2: frozenset({0, 1})}


def test_without_an_authorizer_a_regex_subscriber_gets_every_match() -> None:
    c = Cluster()
    joined = _join(c, "m1", regex="t.*", describable=None)
    assert joined.assignment is not None and set(joined.assignment) == {T1, T2}


def test_a_filtered_regex_keeps_the_members_named_topics() -> None:
    c = Cluster()
    joined = _join(c, "m1", regex="t2", names=("t1",), describable=_only("t1"))
    assert joined.assignment == {T1: frozenset(range(6))}


def test_only_the_topics_the_regex_matches_are_asked_about() -> None:
    asked: list[str] = []

    def describable(topic: str) -> bool:
        asked.append(topic)
        return topic == "t1"

    c = Cluster()
    c.topics.set("x9", uuid.UUID(int=9), 1)
    joined = _join(c, "m1", regex="t.*", describable=describable)
    assert joined.assignment == {T1: frozenset(range(6))}
    assert set(asked) == {"t1", "t2"}  # never x9, which the regex does not match


def _classic_join(c: Cluster, member_id: str, describable: Describable | None) -> JoinAnswer:
    answers: list[JoinAnswer] = []
    protocols = (("range", subscription("t1")),)
    request = JoinRequest("g", member_id, None, 10_000, 30_000, "consumer", protocols, None, 5,
                          "classic", "/127.0.0.1", answers.append, describable)  # fmt: skip
    c.mgr.join_group(request)
    assert answers, "the join was parked"
    return answers[0]


@pytest.mark.parametrize(("describable", "regex_member_topics"), [(_only("t1"), {T1}), (None, {T1, T2})])
def test_a_classic_member_joining_resolves_the_groups_regexes_with_its_own_decisions(
    describable: Describable | None, regex_member_topics: set[uuid.UUID]
) -> None:
    # kcoord resolves the group's regexes whenever a join recomputes the target: with the joiner's
    # decisions when an authorizer gave some, never unfiltered (docs/compat.md)
    c = Cluster()
    assert _join(c, "m1", regex="t.*", describable=_only("t1")).assignment == {T1: frozenset(range(6))}
    assert _classic_join(c, "c1", describable).error == ErrorCode.NONE
    assert set(c.group().target_of("m1")) == regex_member_topics
