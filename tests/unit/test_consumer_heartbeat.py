"""ConsumerGroupHeartbeat (KIP-848), row by row of Kafka's decision table, with a fake clock and an
in-memory log (GroupMetadataManager.consumerGroupHeartbeat, CurrentAssignmentBuilder)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.coordinator.groups import GroupConfig, GroupManager
from kcoord.coordinator.groups.consumer.heartbeat import HeartbeatAnswer, HeartbeatRequest
from kcoord.coordinator.groups.consumer.model import ConsumerGroupState, MemberState
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from tests.unit.fakes import MemoryRecordLog

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


@dataclass
class FakeTopics:
    """A TopicView over a dict: name -> (id, partitions)."""

    topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    version: int = 0

    def set(self, name: str, topic_id: uuid.UUID, partitions: int) -> None:
        self.topics[name] = (topic_id, partitions)
        self.version += 1

    def describe(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (i, _) in self.topics.items() if i == topic_id), None)

    def names(self) -> Iterable[str]:
        return list(self.topics)


class Answer:
    def __init__(self) -> None:
        self.answers: list[HeartbeatAnswer] = []

    def __call__(self, answer: HeartbeatAnswer) -> None:
        assert not self.answers, "answered twice"
        self.answers.append(answer)

    @property
    def value(self) -> HeartbeatAnswer:
        assert self.answers, "not answered"
        return self.answers[0]


class Cluster:
    def __init__(self, **config: Any) -> None:
        self.clock = FakeClock()
        self.timers = FakeTimers(self.clock)
        self.log = MemoryRecordLog()
        self.topics = FakeTopics()
        self.topics.set("t1", T1, 6)
        self.topics.set("t2", T2, 2)
        settings = {"consumer_session_timeout_ms": 45_000, "consumer_heartbeat_interval_ms": 5000, **config}
        self.mgr = GroupManager(
            GroupConfig(**settings), self.clock, self.timers, self.log, topics=self.topics
        )
        self.mgr.on_loaded()

    def hb(
        self,
        member_id: str,
        epoch: int,
        *,
        owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None = (),
        topics: tuple[str, ...] | None = ("t1",),
        regex: str | None = None,
        rebalance_timeout_ms: int = 30_000,
        instance_id: str | None = None,
        assignor: str | None = None,
        group: str = "g",
        version: int = 1,
    ) -> HeartbeatAnswer:
        answer = Answer()
        request = HeartbeatRequest(
            group, member_id, epoch, instance_id, None, rebalance_timeout_ms, topics, regex, assignor,
            owned, "client", "/127.0.0.1", version,
        )  # fmt: skip
        self.mgr.consumer.heartbeat(request, answer)
        return answer.value

    def steady(self, member_id: str, answer: HeartbeatAnswer) -> HeartbeatAnswer:
        """The member's next (incremental) heartbeat, reporting what it was given as owned."""
        owned = [(t, sorted(ps)) for t, ps in (answer.assignment or {}).items()]
        return self.hb(member_id, answer.member_epoch, owned=owned, topics=None, rebalance_timeout_ms=-1)

    def group(self, group_id: str = "g") -> Any:
        return self.mgr._rt.consumer_groups.get(group_id)


def partitions(answer: HeartbeatAnswer, topic_id: uuid.UUID = T1) -> set[int]:
    assert answer.assignment is not None
    return set(answer.assignment.get(topic_id, ()))


# -- joining ------------------------------------------------------------------------------------------
def test_a_first_member_gets_every_partition_at_epoch_2() -> None:
    # Kafka 4.3: a group starts at epoch 1 (ModernGroup's constructor); the member's subscription bumps it.
    c = Cluster()
    a = c.hb("m1", 0)
    assert (a.error, a.member_id, a.member_epoch, a.heartbeat_interval_ms) == (ErrorCode.NONE, "m1", 2, 5000)
    assert partitions(a) == set(range(6))
    group = c.group()
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, ConsumerGroupState.STABLE)


def test_v0_lets_the_coordinator_name_the_member_and_v1_requires_a_member_id() -> None:
    c = Cluster()
    named = c.hb("", 0, version=0)
    assert named.error == ErrorCode.NONE and named.member_id
    refused = c.hb("", 0, version=1)
    assert (refused.error, refused.message) == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
        ({"owned": None}, "TopicPartitions must be empty when (re-)joining."),
        ({"owned": [(T1, [0])]}, "TopicPartitions must be empty when (re-)joining."),
        (
            {"topics": None},
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"instance_id": ""}, "InstanceId can't be empty."),
        ({"group": ""}, "GroupId can't be empty."),
    ],
)
def test_an_invalid_first_heartbeat_is_invalid_request(changes: dict[str, Any], message: str) -> None:
    c = Cluster()
    a = c.hb("m1", 0, **changes)
    assert (a.error, a.message) == (ErrorCode.INVALID_REQUEST, message)
    assert c.log.batches == []


def test_an_invalid_epoch_an_unknown_assignor_and_a_bad_regex_are_refused() -> None:
    c = Cluster()
    assert c.hb("m1", -3).error == ErrorCode.INVALID_REQUEST
    assert c.hb("m1", 0, assignor="sticky").error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert c.hb("m1", 0, topics=None, regex="(?=lookahead)").error == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_a_heartbeat_from_an_unknown_member_or_group() -> None:
    c = Cluster()
    assert c.hb("m1", 3).error == ErrorCode.GROUP_ID_NOT_FOUND
    c.hb("m1", 0)
    assert c.hb("m2", 1, topics=None).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_leaving_a_group_that_does_not_exist_is_group_id_not_found_in_kafkas_words() -> None:
    # GroupMetadataManager.consumerGroupLeave finds the group with group(groupId): "Group %s not found."
    c = Cluster()
    left = c.hb("m1", -1, topics=None, owned=None, rebalance_timeout_ms=-1, group="nope")
    assert (left.error, left.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")


def test_an_empty_subscription_joins_and_is_assigned_nothing() -> None:
    # GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid refuses a null
    # subscription only: an empty list of names is a subscription to no topic.
    c = Cluster()
    joined = c.hb("m1", 0, topics=())
    assert (joined.error, joined.member_epoch) == (ErrorCode.NONE, 1)
    assert partitions(joined) == set()
    assert c.group().members["m1"].subscribed_topic_names == ()


def test_the_group_max_size_refuses_new_members_only() -> None:
    c = Cluster(consumer_max_size=1)
    first = c.hb("m1", 0)
    assert c.hb("m2", 0).error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert c.steady("m1", first).error == ErrorCode.NONE


# -- fencing ------------------------------------------------------------------------------------------
def test_epochs_ahead_or_behind_are_fenced_but_a_lost_response_is_forgiven() -> None:
    c = Cluster()
    first = c.hb("m1", 0)  # epoch 2
    second = c.hb("m2", 0)  # epoch 3; m1 must give up partitions
    assert second.member_epoch == 3
    revoking = c.steady("m1", first)
    assert revoking.member_epoch == 2  # still epoch 2 until it revoked
    kept = partitions(revoking)
    done = c.hb("m1", 2, owned=[(T1, sorted(kept))], topics=None, rebalance_timeout_ms=-1)
    assert done.member_epoch == 3
    assert c.hb("m1", 4, owned=[(T1, sorted(kept))], topics=None).error == ErrorCode.FENCED_MEMBER_EPOCH
    # The response bumping it to 3 was lost: epoch 2 (its previous) with owned partitions within its
    # assignment is accepted; with a partition it no longer has, fenced.
    lost = c.hb("m1", 2, owned=[(T1, sorted(kept))], topics=None, rebalance_timeout_ms=-1)
    assert (lost.error, lost.member_epoch) == (ErrorCode.NONE, 3)
    assert c.hb("m1", 2, owned=[(T1, list(range(6)))], topics=None).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert c.hb("m1", 0, owned=[], topics=("t1",)).error == ErrorCode.NONE  # epoch 0: a rejoin


# -- reconciliation -----------------------------------------------------------------------------------
def test_a_partition_moves_only_after_its_owner_revoked_it() -> None:
    c = Cluster()
    first = c.hb("m1", 0)
    second = c.hb("m2", 0)
    assert partitions(second) == set()  # everything it is to get is still owned by m1
    assert c.group().members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    revoking = c.steady("m1", first)
    member = c.group().members["m1"]
    assert member.state is MemberState.UNREVOKED_PARTITIONS
    to_move = set(member.pending_revocation[T1])
    assert len(to_move) == 3 and partitions(revoking) == set(range(6)) - to_move
    # m2 still gets nothing while m1 has not reported them revoked
    assert c.steady("m2", second).assignment is None
    c.hb("m1", 2, owned=[(T1, sorted(partitions(revoking)))], topics=None, rebalance_timeout_ms=-1)
    got = c.hb("m2", 3, owned=[], topics=None, rebalance_timeout_ms=-1)
    assert partitions(got) == to_move
    assert c.group().state is ConsumerGroupState.STABLE


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    c = Cluster()
    first = c.hb("m1", 0, rebalance_timeout_ms=10_000)
    c.hb("m2", 0)
    c.steady("m1", first)  # told to revoke
    c.timers.advance(9_999)
    assert "m1" in c.group().members
    c.timers.advance(1)
    assert "m1" not in c.group().members
    assert c.group().group_epoch == 4


def test_a_silent_member_is_fenced_after_the_session_timeout() -> None:
    c = Cluster(consumer_session_timeout_ms=3000)
    first = c.hb("m1", 0)
    c.hb("m2", 0)
    c.timers.advance(2000)
    c.steady("m1", first)  # m1 heartbeats, m2 does not
    c.timers.advance(1000)
    assert set(c.group().members) == {"m1"}


def test_a_new_topic_bumps_the_epoch_at_the_next_heartbeat() -> None:
    c = Cluster()
    first = c.hb("m1", 0, topics=("t1", "t3"))
    assert first.member_epoch == 2
    c.topics.set("t3", uuid.UUID(int=3), 2)
    after = c.steady("m1", first)
    assert after.member_epoch == 3 and partitions(after, uuid.UUID(int=3)) == {0, 1}


def test_a_regex_subscription_resolves_against_the_topics() -> None:
    c = Cluster()
    a = c.hb("m1", 0, topics=None, regex="t.*")
    assert partitions(a, T1) == set(range(6)) and partitions(a, T2) == {0, 1}
    assert c.hb("m2", 0, topics=None, regex="t").member_epoch == 3  # full-name match: nothing


# -- leaving ------------------------------------------------------------------------------------------
def test_leaving_removes_the_member_and_bumps_the_epoch() -> None:
    c = Cluster()
    c.hb("m1", 0)
    c.hb("m2", 0)
    left = c.hb("m2", -1, topics=None)
    assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.NONE, "m2", -1)
    assert set(c.group().members) == {"m1"} and c.group().group_epoch == 4


def test_a_static_member_leaving_for_a_while_is_replaced_with_its_assignment() -> None:
    c = Cluster()
    first = c.hb("m1", 0, instance_id="i1")
    assert c.hb("m1", -2, instance_id="i1", topics=None).member_epoch == -2
    assert c.hb("m9", 0, instance_id="i2").error == ErrorCode.NONE  # another instance joins
    replacement = c.hb("m1b", 0, instance_id="i1")
    assert replacement.error == ErrorCode.NONE
    assert "m1" not in c.group().members and c.group().static_members["i1"] == "m1b"
    assert partitions(replacement) <= partitions(first)


def test_static_instance_ids_are_not_shared() -> None:
    c = Cluster()
    c.hb("m1", 0, instance_id="i1")
    assert c.hb("m2", 0, instance_id="i1").error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert c.hb("m2", 1, instance_id="i1", topics=None).error == ErrorCode.FENCED_INSTANCE_ID


# -- writes -------------------------------------------------------------------------------------------
def test_the_answer_waits_for_durability_and_a_failed_write_restores_the_group() -> None:
    c = Cluster()
    c.log.hold = True
    answer = Answer()
    request = HeartbeatRequest("g", "m1", 0, None, None, 30_000, ("t1",), None, None, [], "c", "h", 1)
    c.mgr.consumer.heartbeat(request, answer)
    assert answer.answers == [] and c.group() is not None  # applied when written, not yet answered
    c.log.release(OSError("disk full"))
    assert answer.value.error == ErrorCode.NOT_COORDINATOR
    assert c.group() is None


def test_offset_commits_check_the_member_epoch() -> None:
    c = Cluster()
    c.hb("m1", 0)  # epoch 2
    assert commit(c, "m1", 2, version=9) == ErrorCode.NONE
    assert commit(c, "m1", 3, version=9) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(c, "m9", 2, version=9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(c, "m1", 2, version=8) == ErrorCode.UNSUPPORTED_VERSION
    c.hb("m1", -1, topics=None)
    assert commit(c, "", -1, version=9) == ErrorCode.NONE  # an empty group takes admin commits


def commit(c: Cluster, member_id: str, epoch: int, version: int) -> ErrorCode:
    from kcoord.coordinator.groups.offset_api import CommitRequest

    errors: list[ErrorCode] = []
    request = CommitRequest("g", epoch, member_id, None, -1, ErrorCode.GROUP_ID_NOT_FOUND,
                            [("t1", [(0, 5, -1, "", -1)])], version)  # fmt: skip
    c.mgr.offset_commit(request, lambda error, _errors: errors.append(error))
    return errors[0]


def test_a_classic_join_takes_over_an_empty_consumer_group() -> None:
    from kcoord.coordinator.groups.join_request import JoinRequest

    c = Cluster()
    c.hb("m1", 0)
    c.hb("m1", -1, topics=None)
    answers: list[Any] = []
    c.mgr.join_group(JoinRequest("g", "", None, 10_000, 10_000, "consumer", (("range", b""),), None, 5,
                                 "c", "h", answers.append))  # fmt: skip
    assert answers[-1].error == ErrorCode.MEMBER_ID_REQUIRED
    assert c.group() is None and c.mgr.group("g") is not None


# -- recovery -----------------------------------------------------------------------------------------
def test_replaying_the_log_rebuilds_the_same_groups() -> None:
    c = Cluster()
    first = c.hb("m1", 0)
    c.hb("m2", 0, instance_id="i2", assignor="range")
    c.steady("m1", first)
    c.hb("m3", 0, topics=("t1", "t2"))
    c.hb("m3", -1, topics=None)
    fresh = Cluster()
    fresh.mgr = GroupManager(GroupConfig(), fresh.clock, fresh.timers, fresh.log, topics=c.topics)
    for record in c.log.records:
        fresh.mgr.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
    fresh.mgr.on_loaded()
    assert snapshot(fresh.group()) == snapshot(c.group())


def snapshot(group: Any) -> tuple[Any, ...]:
    return (
        group.group_epoch, group.assignment_epoch, group.metadata_hash, group.members, group.static_members,
        group.target, group.partition_epochs, group.subscribed_topics,
    )  # fmt: skip


# -- recovery equivalence under random sequences ------------------------------------------------------
MEMBERS = ("m1", "m2", "m3", "m4")
step = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(MEMBERS), st.sampled_from([("t1",), ("t1", "t2"), ("t2",)])),
    st.tuples(st.just("steady"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("advance"), st.sampled_from([1000, 20_000, 50_000])),
    st.tuples(st.just("grow"), st.sampled_from(["t1", "t2"])),
    st.tuples(st.just("failing"), st.sampled_from(MEMBERS)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, max_size=30))
def test_live_state_equals_the_replayed_log(steps: list[tuple[Any, ...]]) -> None:
    c = Cluster(consumer_session_timeout_ms=45_000)
    last: dict[str, HeartbeatAnswer] = {}
    for kind, *args in steps:
        if kind == "join":
            answer = c.hb(args[0], 0, topics=args[1])
            if answer.error == ErrorCode.NONE:
                last[args[0]] = answer
        elif kind == "steady" and args[0] in last:
            member = c.group().members.get(args[0]) if c.group() else None
            if member is not None:
                owned = [(t, sorted(ps)) for t, ps in member.assigned.items()]
                owned += [(t, sorted(ps)) for t, ps in member.pending_revocation.items()]
                c.hb(args[0], member.member_epoch, owned=owned, topics=None, rebalance_timeout_ms=-1)
        elif kind == "leave":
            c.hb(args[0], -1, topics=None)
        elif kind == "advance":
            c.timers.advance(args[0])
        elif kind == "grow":
            topic_id, count = c.topics.topics[args[0]]
            c.topics.set(args[0], topic_id, count + 1)
        elif kind == "failing":
            c.log.fail_with = OSError("disk full")
            c.hb(args[0], 0, topics=("t1",))
            c.log.fail_with = None
    fresh = GroupManager(
        GroupConfig(), FakeClock(), FakeTimers(FakeClock()), MemoryRecordLog(), topics=c.topics
    )
    for record in c.log.records:
        fresh.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
    live = {g: snapshot(group) for g, group in c.mgr._rt.consumer_groups.items()}
    replayed = {g: snapshot(group) for g, group in fresh._rt.consumer_groups.items()}
    assert replayed == live
