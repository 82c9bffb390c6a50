"""ShareGroupHeartbeat's logic (GroupMetadataManager.shareGroupHeartbeat, shareGroupLeave,
initializeShareGroupState, throwIfShareGroupHeartbeatRequestIsInvalid), with fake time and an
in-memory log."""

from __future__ import annotations

import pytest

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.records import GroupConfigRecord
from kcoord.coordinator.groups.share.heartbeat import (
    ShareHeartbeatAnswer,
    ShareHeartbeatRequest,
    can_compute_next_target,
)
from kcoord.coordinator.groups.share.model import ShareGroupState
from kcoord.coordinator.groups.share.records import ShareGroupEpoch, ShareStatePartitions
from tests.unit.share_groups.conftest import T1, T2, Node


@pytest.mark.parametrize(
    ("member_id", "group", "epoch", "topics", "rack", "message"),
    [
        ("", "g", 0, ("t1",), None, "MemberId can't be empty."),
        (" ", "g", 0, ("t1",), None, "MemberId can't be empty."),
        ("m", "", 0, ("t1",), None, "GroupId can't be empty."),
        ("m", "g", 0, ("t1",), "", "RackId can't be empty."),
        ("m", "g", 0, None, None, "SubscribedTopicNames must be set in first request."),
        ("m", "g", 0, (), None, "SubscribedTopicNames must be set in first request."),
        ("m", "g", -2, None, None, "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(
    node: Node, member_id: str, group: str, epoch: int, topics: tuple[str, ...] | None, rack: str | None,
    message: str,
) -> None:  # fmt: skip
    answer = node.hb(member_id, epoch, topics, group=group, rack_id=rack)
    assert (answer.error, answer.message) == (ErrorCode.INVALID_REQUEST, message)
    assert node.log.records == []


def test_a_join_gets_partitions_once_their_share_state_is_initialized(node: Node) -> None:
    # Kafka 4.3 (seen on the oracle): the first heartbeat gets epoch 2 and no partition, and starts
    # the initialization of the subscribed share partitions; once initialized the group epoch is
    # bumped and the next heartbeat gets them.
    first = node.hb("m1", 0, ("t1",))
    assert (first.error, first.member_id, first.member_epoch, first.heartbeat_interval_ms) == (
        ErrorCode.NONE, "m1", 2, 5000,
    )  # fmt: skip
    assert first.assignment == {}
    group = node.mgr.share.group("g")
    assert group is not None and group.state is ShareGroupState.STABLE
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    assert group.initialized_partitions() == {T1: frozenset(range(4))} and group.initializing == {}
    second = node.hb("m1", 2)
    assert (second.member_epoch, second.assignment) == (3, {T1: frozenset(range(4))})
    steady = node.hb("m1", 3)
    assert (steady.error, steady.member_epoch, steady.assignment) == (ErrorCode.NONE, 3, None)
    assert node.mgr.share.assignment("g", "m1") == {T1: frozenset(range(4))}
    assert node.mgr.share.is_member("g", "m1") and not node.mgr.share.is_member("g", "m2")


def test_a_second_member_gets_initialized_partitions_at_once(node: Node) -> None:
    node.join("m1", "t1")
    second = node.hb("m2", 0, ("t1",))
    assert second.member_epoch == 4 and second.assignment is not None
    first = node.hb("m1", 3)
    assert first.member_epoch == 4 and first.assignment is not None
    assert set(first.assignment[T1]) | set(second.assignment[T1]) == set(range(4))
    assert len(first.assignment[T1]) == len(second.assignment[T1]) == 2


def test_more_members_than_partitions_share_them(node: Node) -> None:
    for i in range(3):
        node.join(f"m{i}", "t2")
    node.sync("m0", "m1", "m2")
    assignments = [node.mgr.share.assignment("g", f"m{i}") for i in range(3)]
    assert all(a and len(a[T2]) >= 1 for a in assignments)  # nobody idles: partitions are shared
    assert set().union(*(a[T2] for a in assignments)) == {0, 1}


def test_heterogeneous_subscriptions(node: Node) -> None:
    node.join("m1", "t1")
    node.join("m2", "t1", "t2")
    node.sync("m1", "m2")
    assert node.mgr.share.assignment("g", "m2")[T2] == frozenset({0, 1})
    assert T2 not in node.mgr.share.assignment("g", "m1")
    both = node.mgr.share.assignment("g", "m1")[T1] | node.mgr.share.assignment("g", "m2")[T1]
    assert both == frozenset(range(4))


def test_fenced_epochs_and_unknown_members(node: Node) -> None:
    node.join("m1", "t1")
    node.hb("m2", 0, ("t1",))
    assert node.hb("m1", 3).member_epoch == 4  # m1 is at 4, previous 3
    greater = node.hb("m1", 6)
    assert greater.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert greater.message is not None and "greater member epoch (6)" in greater.message
    assert node.hb("m1", 3).error is ErrorCode.NONE  # the previous epoch is accepted (a lost answer)
    smaller = node.hb("m1", 1)
    assert smaller.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert smaller.message == (
        "The share group member has a smaller member epoch (1) than the one known by the group "
        "coordinator (4), and it does not match the previous member epoch (3). The member must abandon "
        "all its partitions and rejoin."
    )
    unknown = node.hb("nobody", 4)
    assert (unknown.error, unknown.message) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member nobody is not a member of group g.",
    )
    missing = node.hb("m", 1, group="other")
    assert (missing.error, missing.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Share group other not found.")
    leaving = node.hb("m", -1, group="other")
    assert (leaving.error, leaving.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group other not found.")


def test_leave_bumps_the_epoch_and_tells_the_data_side(node: Node) -> None:
    node.join("m1", "t1")
    node.hb("m2", 0, ("t1",))
    left = node.hb("m2", -1)
    assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.NONE, "m2", -1)
    assert node.listener.left == [("g", "m2")]
    group = node.mgr.share.group("g")
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 5
    # m1 never took epoch 4's half: it goes from 3 to 5 keeping every partition, so Kafka sends no
    # assignment (hasAssignedPartitionsChanged is false)
    back = node.hb("m1", 3)
    assert (back.member_epoch, back.assignment) == (5, None)
    assert node.mgr.share.assignment("g", "m1") == {T1: frozenset(range(4))}
    assert node.hb("m2", -1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert node.hb("m1", -1).error is ErrorCode.NONE
    assert node.mgr.share.group("g").state is ShareGroupState.EMPTY  # type: ignore[union-attr]


def test_session_timeout_fences_the_member(node: Node) -> None:
    node.join("m1", "t1")
    node.hb("m2", 0, ("t1",))
    node.timers.advance(44_000)
    assert node.hb("m1", 3).member_epoch == 4  # m1 keeps its session alive, m2 does not
    node.timers.advance(2_000)
    assert node.listener.left == [("g", "m2")]
    assert node.hb("m2", 4).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert node.hb("m1", 4).member_epoch == 5


def test_group_config_session_timeout_and_interval() -> None:
    node = Node().load()
    configs = {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "7000"}
    node.mgr.apply(GroupConfigRecord("g", configs))
    assert node.hb("m1", 0, ("t1",)).heartbeat_interval_ms == 7000
    node.timers.advance(49_000)
    assert node.listener.left == []
    node.timers.advance(1_000)
    assert node.listener.left == [("g", "m1")]


def test_max_size() -> None:
    node = Node(share_max_size=2).load()
    node.hb("m1", 0, ("t1",))
    node.hb("m2", 0, ("t1",))
    full = node.hb("m3", 0, ("t1",))
    assert (full.error, full.message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 2 members.",
    )
    assert node.hb("m2", 0, ("t1",)).error is ErrorCode.NONE  # a member rejoining is no new member


def test_subscription_change_and_topic_growth(node: Node) -> None:
    node.join("m1", "t1")
    changed = node.hb("m1", 3, ("t2",))  # t2 is not initialized yet: nothing assigned
    assert (changed.member_epoch, changed.assignment) == (4, {})
    assert node.hb("m1", 4).assignment == {T2: frozenset({0, 1})}  # initialized: epoch 5
    node.topics.set("t2", T2, 3)
    grown = node.hb("m1", 5)  # the metadata hash moved: epoch 6, partition 2 initializing
    assert (grown.member_epoch, grown.assignment) == (6, None)
    now = node.hb("m1", 6)
    assert (now.member_epoch, now.assignment) == (7, {T2: frozenset({0, 1, 2})})


def test_records_written_in_kafkas_order(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    joined, initialized = ([type(r).__name__ for r in batch] for batch in node.log.batches)
    assert joined == [
        "ShareMemberSubscription",
        "ShareGroupEpoch",
        "ShareTargetMember",
        "ShareTargetEpoch",
        "ShareMemberAssignment",
        "ShareStatePartitions",
    ]
    assert initialized == ["ShareStatePartitions", "ShareGroupEpoch"]
    initializing, done = node.log.of_type(ShareStatePartitions)
    assert [i.topic_name for i in initializing.initializing] == ["t1"] and initializing.initialized == ()
    assert [sorted(i.partitions) for i in done.initialized] == [[0, 1, 2, 3]] and done.initializing == ()
    assert [r.epoch for r in node.log.of_type(ShareGroupEpoch)] == [2, 3]


def test_a_failed_write_restores_the_group_and_answers_the_error(node: Node) -> None:
    node.join("m1", "t1")
    node.log.fail_with = OSError("disk")
    failed = node.hb("m2", 0, ("t1",))
    assert failed.error is not ErrorCode.NONE
    group = node.mgr.share.group("g")
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 3
    node.log.fail_with = None
    assert node.hb("m2", 0, ("t1",)).member_epoch == 4


def test_a_failed_initialization_is_retried_by_the_next_heartbeat_and_by_a_restart(node: Node) -> None:
    node.log.hold = True
    answers: list[ShareHeartbeatAnswer] = []
    node.mgr.share.heartbeat(
        ShareHeartbeatRequest("g", "m1", 0, subscribed_topic_names=("t1",)), answers.append
    )
    node.log.release_first()  # the join is durable; the initialization's write is held
    assert answers[0].member_epoch == 2
    node.log.release(OSError("disk"))  # and fails
    group = node.mgr.share.group("g")
    assert group is not None and group.initializing and not group.initialized
    again = node.restart()
    restarted = again.mgr.share.group("g")
    assert restarted is not None and restarted.initialized_partitions() == {T1: frozenset(range(4))}
    assert again.hb("m1", 2).assignment == {T1: frozenset(range(4))}
    # the same node: its next heartbeat initializes what is left initializing
    assert node.hb("m1", 2).assignment is None
    assert node.hb("m1", 2).assignment == {T1: frozenset(range(4))}


def test_loading_answers_load_in_progress() -> None:
    node = Node()
    assert node.hb("m1", 0, ("t1",)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    node.mgr.shutdown()
    assert node.hb("m1", 0, ("t1",)).error is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_the_assignment_interval_as_kafka_4_3_answers() -> None:
    """The sequence seen on Kafka 4.3.1 with its default share.assignment.interval.ms (1 s): a member
    joining within the interval of the last assignment gets the current target at the current
    assignment epoch, and nothing is recomputed until the interval passed."""
    node = Node(share_assignment_interval_ms=1000).load()
    assert (node.hb("m1", 0, ("t1",)).member_epoch, node.hb("m1", 0, ("t1",)).assignment) == (2, {})
    node.clock.advance(5_000)
    assigned = node.hb("m1", 2)
    assert (assigned.member_epoch, assigned.assignment) == (3, {T1: frozenset(range(4))})
    assert node.hb("m1", 3).assignment is None
    joined = node.hb("m2", 0, ("t1",))
    assert (joined.member_epoch, joined.assignment) == (3, {})
    group = node.mgr.share.group("g")
    assert group is not None and (group.group_epoch, group.assignment_epoch) == (4, 3)
    assert (node.hb("m1", 3).member_epoch, node.hb("m1", 3).assignment) == (3, None)
    assert node.hb("m2", -1).member_epoch == -1
    assert (group.group_epoch, group.assignment_epoch) == (5, 3)
    assert node.hb("m1", 4).error is ErrorCode.FENCED_MEMBER_EPOCH
    rejoined = node.hb("m1", 0, ("t1",))
    assert (rejoined.member_epoch, rejoined.assignment) == (3, {T1: frozenset(range(4))})
    node.clock.advance(1_000)  # the interval passed: the next heartbeat recomputes at epoch 5
    assert (node.hb("m1", 3).member_epoch, group.assignment_epoch) == (5, 5)


@pytest.mark.parametrize(
    ("timestamp_ms", "interval_ms", "now_ms", "allowed"),
    [
        (0, 1000, 10, True),  # never computed: at once, whatever the clock says
        (5000, 0, 5000, True),  # no interval
        (5000, 1000, 5999, False),
        (5000, 1000, 6000, True),
    ],
)
def test_can_compute_next_target_as_kafka_4_3(timestamp_ms: int, interval_ms: int, now_ms: int,
                                              allowed: bool) -> None:  # fmt: skip
    """GroupMetadataManager.canComputeNextTargetAssignment, probed on the 4.3.1 jar's bytecode."""
    assert can_compute_next_target(timestamp_ms, interval_ms, now_ms) is allowed


def test_the_groups_assignment_interval_overrides_the_brokers() -> None:
    """share.assignment.interval.ms of the group over group.share.assignment.interval.ms
    (GroupMetadataManager.shareGroupAssignmentIntervalMs): a broker batching for 10 s, a group that
    asks for 0 is recomputed at every heartbeat, a group without its own waits the 10 s."""
    node = Node(share_assignment_interval_ms=10_000).load()
    node.mgr.apply(GroupConfigRecord("fast", {"share.assignment.interval.ms": "0"}))
    for group in ("fast", "slow"):
        assert node.hb("m1", 0, ("t1",), group=group).member_epoch == 2
    assert node.hb("m1", 2, group="fast").assignment == {T1: frozenset(range(4))}
    assert node.hb("m1", 2, group="slow").assignment is None
    node.clock.advance(10_000)
    assert node.hb("m1", 2, group="slow").assignment == {T1: frozenset(range(4))}
