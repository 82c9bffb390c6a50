"""Durability ordering (no response before the log says durable) and recovery from records."""

from __future__ import annotations

from kcoord.coordinator.groups import (
    GroupMetadataRecord,
    GroupState,
    GroupTombstone,
    IllegalStateTransition,
    OffsetCommitRecord,
    OffsetTombstone,
)
from kcoord.coordinator.groups.group import Group
from tests.unit.conftest import Harness

COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16  # a refused write: Kafka's KAFKA_STORAGE_ERROR -> NOT_COORDINATOR
NOT_COORDINATOR = 16
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27


# -- durability ordering -------------------------------------------------------------------------
def test_offset_commit_is_answered_and_visible_only_once_durable(h: Harness) -> None:
    h.log.hold = True
    r = h.commit({("t", 0): 5})
    assert not r.done and h.log.held == 1
    assert h.fetch({"t": [0]})["topics"][0]["partitions"][0]["committed_offset"] == -1
    h.log.release()
    assert r.done and h.fetch({"t": [0]})["topics"][0]["partitions"][0]["committed_offset"] == 5


def test_failed_offset_commit_is_not_coordinator_and_not_applied(h: Harness) -> None:
    h.log.fail_with = OSError("disk")
    r = h.commit({("t", 0): 5})
    assert [p["error_code"] for p in r["topics"][0]["partitions"]] == [NOT_COORDINATOR]
    assert h.mgr.committed_offsets("g") == {}


def test_a_simple_group_made_by_a_failed_commit_is_forgotten(h: Harness) -> None:
    # Kafka creates the simple group in its timeline state and reverts it with the failed write
    # (OffsetMetadataManager.commitOffset, CoordinatorRuntime): nothing of the request remains.
    h.log.fail_with = OSError("disk")
    h.commit({("t", 0): 5}, group="simple")
    assert h.mgr.group("simple") is None
    assert h.mgr.list_groups((), ())[1] == []


def test_a_simple_group_stays_while_another_commit_to_it_is_in_flight(h: Harness) -> None:
    h.log.hold = True
    first = h.commit({("t", 0): 5}, group="simple")
    second = h.commit({("t", 1): 6}, group="simple")
    h.log.release(OSError("disk"))  # both fail: the group goes with the last one
    assert first.done and second.done and h.mgr.group("simple") is None
    h.log.hold = True
    first = h.commit({("t", 0): 5}, group="simple")
    h.log.hold = False
    second = h.commit({("t", 1): 6}, group="simple")  # durable at once, while the first is held
    h.log.release(OSError("disk"))
    assert h.mgr.group("simple") is not None and h.mgr.committed_offsets("simple") == {
        ("t", 1): h.log.records[-1]
    }


def test_a_group_tombstone_is_applied_when_written_and_never_again(h: Harness) -> None:
    # Kafka applies a group tombstone when it is written: a JoinGroup right behind the
    # DeleteGroups makes a new group, which the tombstone becoming durable leaves alone.
    h.commit({("t", 0): 1})
    h.log.hold = True
    deleted = h.delete_groups("g")
    assert h.mgr.group("g") is None  # gone for the requests that follow at once
    join = h.join(version=3)
    h.log.release()
    assert deleted.done and h.state() is not None
    h.settle(join)
    assert join.error == 0 and h.state() is GroupState.COMPLETING_REBALANCE


def test_sync_responses_wait_for_the_assignment_record(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    gen = h.generation()
    follower = h.sync(ids[1], gen)
    h.log.hold = True
    leader = h.sync(ids[0], gen, {ids[0]: b"L", ids[1]: b"F"})
    assert not leader.done and not follower.done and h.state() is GroupState.COMPLETING_REBALANCE
    h.log.release()
    assert leader["assignment"] == b"L" and follower["assignment"] == b"F" and h.state() is GroupState.STABLE


def test_failed_assignment_persist_answers_retriable_error_and_rebalances(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    gen = h.generation()
    follower = h.sync(ids[1], gen)
    h.log.fail_with = OSError("disk")
    leader = h.sync(ids[0], gen, {ids[0]: b"L"})
    assert leader.error == follower.error == NOT_COORDINATOR
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in h.mgr.group("g").members.values())


def test_late_assignment_persist_after_a_new_rebalance_is_ignored(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    gen = h.generation()
    h.log.hold = True
    leader = h.sync(ids[0], gen, {ids[0]: b"L"})
    h.log.hold = False
    h.leave(ids[1])  # rebalance while the record is in flight: the parked sync gets RIP
    assert leader.error == REBALANCE_IN_PROGRESS
    h.log.release()
    assert h.state() is not GroupState.STABLE


def test_static_replacement_is_answered_after_persist_and_reverted_on_failure(h: Harness) -> None:
    a = h.join(iid="a")
    b = h.join(iid="b")
    h.settle(a, b)
    gen = a["generation_id"]
    h.sync(b["member_id"], gen, iid="b")
    h.sync(a["member_id"], gen, {a["member_id"]: b"A", b["member_id"]: b"B"}, iid="a")
    h.log.hold = True
    r = h.join(iid="b", client_id="new-client")
    assert not r.done
    h.log.release(OSError("disk"))
    assert r.error == NOT_COORDINATOR and r["member_id"] == ""
    group = h.mgr.group("g")
    assert group.static_members["b"] == b["member_id"] and group.members[b["member_id"]].client_id == "c"
    assert h.heartbeat(b["member_id"], gen, iid="b").error == 0  # the old id still works


def test_empty_group_record_is_written_when_the_last_member_leaves(h: Harness) -> None:
    ids = h.stable_group(1)
    h.leave(ids[0])
    record = h.log.records[-1]
    assert isinstance(record, GroupMetadataRecord) and record.members == () and record.leader_id is None


# -- recovery ------------------------------------------------------------------------------------
def _replay(source: Harness, **config: int) -> Harness:
    target = Harness(loaded=False, **config)
    for record in source.log.records:
        target.mgr.apply(record)
    target.mgr.on_loaded()
    return target


def test_recovery_restores_groups_members_assignments_and_offsets(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    h.commit({("t", 0): 42}, member_id=ids[0], generation=gen, metadata="meta")
    h.commit({("t", 0): 7}, group="simple")
    r = _replay(h)
    group = r.mgr.group("g")
    assert group.state is GroupState.STABLE and group.generation_id == gen and group.leader_id == ids[0]
    assert group.protocol_name == "range" and group.subscribed_topics == frozenset({"t"})
    assert {m: x.assignment for m, x in group.members.items()} == {m: m.encode() for m in ids}
    assert r.fetch({"t": [0]})["topics"][0]["partitions"][0]["metadata"] == "meta"
    assert r.state("simple") is GroupState.EMPTY and r.mgr.group("simple").protocol_type is None
    assert r.sync(ids[1], gen)["assignment"] == ids[1].encode()


def test_recovered_members_are_expired_unless_they_heartbeat(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    r = _replay(h)
    r.advance(9_000)
    assert r.heartbeat(ids[0], gen).error == 0
    r.advance(1_000)
    assert ids[1] not in r.mgr.group("g").members and r.state() is GroupState.PREPARING_REBALANCE
    rejoin = r.join(ids[0])
    assert rejoin.error == 0 and rejoin["generation_id"] == gen + 1  # generations never repeat


def test_recovery_applies_tombstones(h: Harness) -> None:
    ids = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=ids[0], generation=h.generation())
    h.leave(ids[0])
    h.delete_groups("g")
    assert isinstance(h.log.records[-1], GroupTombstone) and isinstance(h.log.records[-2], OffsetTombstone)
    r = _replay(h)
    assert r.mgr.group("g") is None and r.mgr.committed_offsets("g") == {}


def test_recovery_of_offsets_without_a_group_record_yields_a_simple_group() -> None:
    h = Harness(loaded=False)
    h.mgr.apply(GroupMetadataRecord("g", "consumer", 3, None, None, 1000, ()))
    h.mgr.apply(GroupTombstone("g"))
    h.mgr.apply(OffsetCommitRecord("h", "t", 0, 5, -1, "", 1000))
    h.mgr.on_loaded()
    assert h.state("g") is None and h.state("h") is GroupState.EMPTY
    group = h.mgr.group("h")
    assert group.generation_id == 0 and group.protocol_type is None


def test_recovered_empty_group_keeps_its_generation_and_state_timestamp() -> None:
    h = Harness(loaded=False)
    h.mgr.apply(GroupMetadataRecord("g", "consumer", 5, None, None, 1234, ()))
    h.mgr.on_loaded()
    group = h.mgr.group("g")
    assert group.state is GroupState.EMPTY and group.generation_id == 5 and group.state_timestamp_ms == 1234
    r = h.join(version=3)
    h.settle(r)
    assert r["generation_id"] == 6


def test_on_loaded_rebalances_a_group_over_the_max_size(h: Harness) -> None:
    h.stable_group(3)
    r = _replay(h, group_max_size=2)
    assert r.state() is GroupState.PREPARING_REBALANCE


def test_on_loaded_schedules_offset_expiry(h: Harness) -> None:
    assert h.timers.deadline("expire-offsets") == h.clock.now_ms() + 600_000


# -- lifecycle -----------------------------------------------------------------------------------
def test_shutdown_answers_parked_requests_with_not_coordinator_and_cancels_timers(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    parked_sync = h.sync(ids[1], h.generation())
    _, parked_join = h.join_new(group="other")
    h.mgr.shutdown()
    assert parked_sync.error == NOT_COORDINATOR and parked_join.error == NOT_COORDINATOR
    assert h.timers.keys() == []


def test_illegal_transition_is_a_bug_not_a_client_error() -> None:
    group = Group("g", 0)
    try:
        group.transition_to(GroupState.STABLE, 1)
    except IllegalStateTransition as exc:
        assert exc.old is GroupState.EMPTY and exc.new is GroupState.STABLE
    else:
        raise AssertionError("Empty -> Stable must be illegal")


def test_groups_introspection_summarises_every_group(h: Harness) -> None:
    h.stable_group(2)
    h.commit({("t", 0): 1}, group="simple")
    summary = {s.group_id: s for s in h.mgr.groups()}
    assert summary["g"].state == "Stable" and summary["g"].members == 2 and summary["g"].generation_id == 1
    assert summary["simple"].committed_offsets == 1 and summary["simple"].protocol_type is None


def test_requests_after_shutdown_get_coordinator_not_available(h: Harness) -> None:
    h.stable_group(1)
    h.mgr.shutdown()
    assert h.join(group="x").error == COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat("x", 1).error == COORDINATOR_NOT_AVAILABLE
    assert h.sync("x", 1).error == COORDINATOR_NOT_AVAILABLE
    commit = h.commit({("t", 0): 1})
    assert commit["topics"][0]["partitions"][0]["error_code"] == COORDINATOR_NOT_AVAILABLE
    assert h.fetch(None).error == COORDINATOR_NOT_AVAILABLE


def test_dead_group_is_gone_so_requests_see_a_missing_group(h: Harness) -> None:
    """The matrix's Dead column (COORDINATOR_NOT_AVAILABLE) is unreachable here: a group leaves
    memory in the step it dies (compat.md)."""
    ids = h.stable_group(1)
    gen = h.generation()
    h.leave(ids[0])
    h.delete_groups("g")
    assert h.heartbeat(ids[0], gen).error == UNKNOWN_MEMBER_ID
    assert h.sync(ids[0], gen).error == UNKNOWN_MEMBER_ID
    assert h.leave(ids[0])["members"][0]["error_code"] == UNKNOWN_MEMBER_ID
    assert h.fetch({"t": [0]})["topics"][0]["partitions"][0]["committed_offset"] == -1
    (described,) = h.mgr.describe_groups(["g"])
    assert described.state == "Dead" and described.error == 69  # GROUP_ID_NOT_FOUND; v0-5 show NONE


def test_active_error_enum_has_every_group_error_code_with_kafkas_value() -> None:
    from kcoord.coordinator.groups.errors import GROUP_ERROR_CODES, ErrorCode

    assert {name: int(ErrorCode[name]) for name in GROUP_ERROR_CODES} == GROUP_ERROR_CODES
