"""ShareGroupHeartbeat's logic (GroupMetadataManager.shareGroupHeartbeat, shareGroupLeave,
throwIfShareGroupHeartbeatRequestIsInvalid), with fake time and an in-memory log."""

from __future__ import annotations

import pytest

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.model import ShareGroupState
from kcoord.coordinator.groups.share.records import ShareGroupEpoch, ShareMemberSubscription
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
    node: Node,
    member_id: str,
    group: str,
    epoch: int,
    topics: tuple[str, ...] | None,
    rack: str | None,
    message: str,
) -> None:
    answer = node.hb(member_id, epoch, topics, group=group, rack_id=rack)
    assert (answer.error, answer.message) == (ErrorCode.INVALID_REQUEST, message)
    assert node.log.records == []


def test_join_gets_every_partition_and_the_group_epoch(node: Node) -> None:
    answer = node.hb("m1", 0, ("t1",))
    assert answer.error is ErrorCode.NONE
    assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == ("m1", 2, 5000)
    assert answer.assignment == {T1: frozenset(range(4))}
    group = node.mgr.share.group("g")
    assert group is not None and group.state is ShareGroupState.STABLE
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    # a steady heartbeat changes nothing and sends no assignment
    steady = node.hb("m1", 2)
    assert (steady.error, steady.member_epoch, steady.assignment) == (ErrorCode.NONE, 2, None)
    assert node.mgr.share.assignment("g", "m1") == {T1: frozenset(range(4))}
    assert node.mgr.share.is_member("g", "m1") and not node.mgr.share.is_member("g", "m2")


def test_second_member_splits_the_partitions_and_the_first_learns_it(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    second = node.hb("m2", 0, ("t1",))
    assert second.member_epoch == 3
    first = node.hb("m1", 2)
    assert first.member_epoch == 3 and first.assignment is not None
    together = set(first.assignment[T1]) | set(second.assignment[T1])  # type: ignore[index]
    assert together == set(range(4))
    assert len(first.assignment[T1]) == len(second.assignment[T1]) == 2  # type: ignore[index]


def test_more_members_than_partitions_share_them(node: Node) -> None:
    for i in range(3):
        node.hb(f"m{i}", 0, ("t2",))
    assignments = [node.mgr.share.assignment("g", f"m{i}") for i in range(3)]
    assert all(a and len(a[T2]) >= 1 for a in assignments)  # nobody idles: partitions are shared
    assert set().union(*(a[T2] for a in assignments)) == {0, 1}


def test_heterogeneous_subscriptions(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    node.hb("m2", 0, ("t1", "t2"))
    node.hb("m1", 3)
    assert node.mgr.share.assignment("g", "m2")[T2] == frozenset({0, 1})
    assert T2 not in node.mgr.share.assignment("g", "m1")
    both = node.mgr.share.assignment("g", "m1")[T1] | node.mgr.share.assignment("g", "m2")[T1]
    assert both == frozenset(range(4))


def test_fenced_epochs_and_unknown_members(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    node.hb("m2", 0, ("t1",))
    node.hb("m1", 2)  # m1 is at 3, previous 2
    greater = node.hb("m1", 4)
    assert greater.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert greater.message is not None and "greater member epoch (4)" in greater.message
    assert node.hb("m1", 2).error is ErrorCode.NONE  # the previous epoch is accepted (a lost answer)
    smaller = node.hb("m1", 1)
    assert smaller.error is ErrorCode.FENCED_MEMBER_EPOCH and "smaller member epoch (1)" in str(
        smaller.message
    )
    unknown = node.hb("nobody", 3)
    assert (unknown.error, unknown.message) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member nobody is not a member of group g.",
    )
    missing = node.hb("m", 1, group="other")
    assert (missing.error, missing.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Share group other not found.")


def test_leave_bumps_the_epoch_and_tells_the_data_side(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    node.hb("m2", 0, ("t1",))
    left = node.hb("m2", -1)
    assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.NONE, "m2", -1)
    assert node.listener.left == [("g", "m2")]
    group = node.mgr.share.group("g")
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 4
    # m1 never reconciled to epoch 3: it goes from 2 to 4 keeping every partition, so Kafka sends
    # no assignment (hasAssignedPartitionsChanged is false)
    back = node.hb("m1", 2)
    assert (back.member_epoch, back.assignment) == (4, None)
    assert node.mgr.share.assignment("g", "m1") == {T1: frozenset(range(4))}
    assert node.hb("m2", -1).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert node.hb("m1", -1).error is ErrorCode.NONE
    assert node.mgr.share.group("g").state is ShareGroupState.EMPTY  # type: ignore[union-attr]


def test_session_timeout_fences_the_member(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    node.hb("m2", 0, ("t1",))
    node.timers.advance(44_000)
    assert node.hb("m1", 2).member_epoch == 3  # m1 keeps its session alive, m2 does not
    node.timers.advance(2_000)
    assert node.listener.left == [("g", "m2")]
    assert node.hb("m2", 3).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert node.hb("m1", 3).member_epoch == 4


def test_group_config_session_timeout_and_interval() -> None:
    node = Node().load()
    node.mgr.apply(_config("g", {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "7000"}))
    assert node.hb("m1", 0, ("t1",)).heartbeat_interval_ms == 7000
    node.timers.advance(49_000)
    assert node.listener.left == []
    node.timers.advance(1_000)
    assert node.listener.left == [("g", "m1")]


def _config(group_id: str, configs: dict[str, str]) -> object:
    from kcoord.coordinator.groups.records import GroupConfigRecord

    return GroupConfigRecord(group_id, configs)


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


def test_subscription_change_and_topic_growth_bump_the_epoch(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    changed = node.hb("m1", 2, ("t2",))
    assert (changed.member_epoch, changed.assignment) == (3, {T2: frozenset({0, 1})})
    node.topics.set("t2", T2, 3)
    grown = node.hb("m1", 3)
    assert (grown.member_epoch, grown.assignment) == (4, {T2: frozenset({0, 1, 2})})


def test_records_written_in_kafkas_order(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    kinds = [type(r).__name__ for r in node.log.batches[0]]
    assert kinds == [
        "ShareMemberSubscription",
        "ShareGroupEpoch",
        "ShareTargetMember",
        "ShareTargetEpoch",
        "ShareMemberAssignment",
    ]
    assert isinstance(node.log.records[0], ShareMemberSubscription)
    assert node.log.of_type(ShareGroupEpoch)[0].epoch == 2


def test_a_failed_write_restores_the_group_and_answers_the_error(node: Node) -> None:
    node.hb("m1", 0, ("t1",))
    node.log.fail_with = OSError("disk")
    failed = node.hb("m2", 0, ("t1",))
    assert failed.error is not ErrorCode.NONE
    group = node.mgr.share.group("g")
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 2
    node.log.fail_with = None
    assert node.hb("m2", 0, ("t1",)).member_epoch == 3


def test_loading_answers_load_in_progress() -> None:
    node = Node()
    assert node.hb("m1", 0, ("t1",)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    node.mgr.shutdown()
    assert node.hb("m1", 0, ("t1",)).error is ErrorCode.COORDINATOR_NOT_AVAILABLE
