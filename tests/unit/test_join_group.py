"""JoinGroup: every row of the state x request matrix (reference §3.3) plus the entry checks (§4.1)."""

from __future__ import annotations

from kcoord.coordinator.groups import GroupState
from tests.unit.conftest import Harness
from tests.unit.fakes import subscription

MEMBER_ID_REQUIRED = 79
UNKNOWN_MEMBER_ID = 25
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
INVALID_SESSION_TIMEOUT = 26
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
REBALANCE_IN_PROGRESS = 27
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15


def _preparing(h: Harness) -> list[str]:
    """A Stable group of two that a new member pushed into PreparingRebalance."""
    ids = h.stable_group(2)
    _, parked = h.join_new(client_id="new")
    assert not parked.done and h.state() is GroupState.PREPARING_REBALANCE
    return ids


def _completing(h: Harness) -> tuple[list[str], int]:
    ids = h.stable_group(2)
    rejoin = [h.join(m) for m in ids]
    assert all(r.done for r in rejoin) and h.state() is GroupState.COMPLETING_REBALANCE
    return ids, h.generation()


# -- MemberId "" (dynamic, v4+) ------------------------------------------------------------------
def test_unknown_dynamic_member_v4_in_empty_gets_member_id_required_and_becomes_pending(h: Harness) -> None:
    r = h.join(version=4, client_id="cli")
    assert r.error == MEMBER_ID_REQUIRED
    assert (
        r["member_id"] == "cli-u1" and r["generation_id"] == -1 and r["leader"] == "" and r["members"] == []
    )
    group = h.mgr.group("g")
    assert group is not None and group.pending_members == {"cli-u1"} and not group.members
    assert h.state() is GroupState.EMPTY


def test_unknown_dynamic_member_v4_in_preparing_rebalance_gets_member_id_required(h: Harness) -> None:
    _preparing(h)
    assert h.join(version=4).error == MEMBER_ID_REQUIRED
    assert h.state() is GroupState.PREPARING_REBALANCE


def test_unknown_dynamic_member_v4_in_completing_rebalance_gets_member_id_required(h: Harness) -> None:
    _completing(h)
    assert h.join(version=4).error == MEMBER_ID_REQUIRED
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_unknown_dynamic_member_v4_in_stable_gets_member_id_required_without_rebalance(h: Harness) -> None:
    h.stable_group(2)
    assert h.join(version=9).error == MEMBER_ID_REQUIRED
    assert h.state() is GroupState.STABLE


# -- MemberId "" (dynamic, v0-3) -----------------------------------------------------------------
def test_unknown_dynamic_member_v3_in_empty_is_added_and_parked_for_initial_delay(h: Harness) -> None:
    r = h.join(version=3, client_id="old")
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE
    h.advance(3000)
    assert r.error == 0 and r["member_id"] == "old-u1" and r["leader"] == "old-u1" and r["generation_id"] == 1
    assert [m["member_id"] for m in r["members"]] == ["old-u1"]


def test_unknown_dynamic_member_v3_in_preparing_rebalance_is_added_and_parked(h: Harness) -> None:
    first = h.join(version=3)
    second = h.join(version=3)
    assert not first.done and not second.done
    h.advance(6000)  # the second member extended the initial delay once
    assert first.error == second.error == 0 and first["generation_id"] == second["generation_id"] == 1


def test_unknown_dynamic_member_v3_in_completing_rebalance_triggers_rebalance(h: Harness) -> None:
    ids, gen = _completing(h)
    parked_sync = h.sync(ids[1], gen)
    r = h.join(version=3)
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE
    assert parked_sync.error == REBALANCE_IN_PROGRESS  # parked SyncGroups are cancelled


def test_unknown_dynamic_member_v3_in_stable_triggers_rebalance(h: Harness) -> None:
    h.stable_group(2)
    r = h.join(version=3)
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


# -- MemberId "" + known GroupInstanceId ---------------------------------------------------------
def test_static_rejoin_in_preparing_rebalance_replaces_member_id_and_fences_old_parked_join(
    h: Harness,
) -> None:
    first = h.join(iid="i1", version=5)
    assert not first.done
    again = h.join(iid="i1", version=5)
    assert first.error == FENCED_INSTANCE_ID and not again.done
    h.advance(3000)
    assert again.error == 0 and again["member_id"] == "i1-u2" and again["leader"] == "i1-u2"
    assert h.mgr.group("g").static_members == {"i1": "i1-u2"}


def test_static_rejoin_in_completing_rebalance_replaces_and_rebalances(h: Harness) -> None:
    a = h.join(iid="a")
    b = h.join(iid="b")
    h.settle(a, b)
    gen = a["generation_id"]
    follower_sync = h.sync(b["member_id"], gen, iid="b")
    assert h.state() is GroupState.COMPLETING_REBALANCE and not follower_sync.done
    again = h.join(iid="b")
    assert follower_sync.error == FENCED_INSTANCE_ID  # old id's parked SyncGroup is fenced
    assert not again.done and h.state() is GroupState.PREPARING_REBALANCE


def _static_stable(h: Harness, version: int = 5) -> tuple[str, str, int]:
    a = h.join(iid="a", version=version)
    b = h.join(iid="b", version=version)
    h.settle(a, b)
    gen = a["generation_id"]
    leader, follower = a["member_id"], b["member_id"]
    h.sync(follower, gen, iid="b")
    h.sync(leader, gen, {leader: b"A", follower: b"B"}, iid="a")
    assert h.state() is GroupState.STABLE
    return leader, follower, gen


def test_static_follower_rejoin_in_stable_with_same_protocol_is_answered_without_rebalance(
    h: Harness,
) -> None:
    leader, follower, gen = _static_stable(h)
    before = len(h.log.batches)
    r = h.join(iid="b")
    assert r.error == 0 and r["member_id"] == "b-u3" and r["generation_id"] == gen
    assert r["leader"] == leader and r["members"] == []
    assert h.state() is GroupState.STABLE and len(h.log.batches) == before + 1  # replacement persisted
    sync = h.sync("b-u3", gen, iid="b")
    assert sync["assignment"] == b"B"
    assert h.heartbeat(follower, gen).error == UNKNOWN_MEMBER_ID  # old id is gone


def test_static_leader_rejoin_v5_gets_old_leader_id_so_it_does_not_reassign(h: Harness) -> None:
    leader, _, _ = _static_stable(h)
    r = h.join(iid="a", version=5)
    assert r.error == 0 and r["member_id"] == "a-u3" and r["leader"] == leader != r["member_id"]
    assert r["members"] == [] and "skip_assignment" not in r.value
    assert h.mgr.group("g").leader_id == "a-u3"


def test_static_leader_rejoin_v9_gets_skip_assignment_and_member_list(h: Harness) -> None:
    _static_stable(h, version=9)
    r = h.join(iid="a", version=9)
    assert r.error == 0 and r["skip_assignment"] is True and r["leader"] == r["member_id"] == "a-u3"
    assert {m["member_id"] for m in r["members"]} == {"a-u3", "b-u2"}
    assert r["protocol_type"] == "consumer" and r["protocol_name"] == "range"


def test_static_rejoin_in_stable_with_changed_protocol_triggers_rebalance(h: Harness) -> None:
    _static_stable(h)
    r = h.join(iid="b", protocols=(("roundrobin", subscription("t")),))
    # "roundrobin" is not supported by member a: no common protocol.
    assert r.error == INCONSISTENT_GROUP_PROTOCOL
    r = h.join(iid="b", protocols=(("range", subscription("t")), ("rr", b"")))
    assert r.error == 0 and h.state() is GroupState.STABLE


def test_static_rejoin_in_stable_changing_selected_protocol_rebalances() -> None:
    h = Harness()
    both = (("rr", b""), ("range", subscription("t")))
    a = h.join(iid="a", protocols=(("range", subscription("t")), ("rr", b"")))
    b = h.join(iid="b", protocols=both)
    c = h.join(iid="c", protocols=both)
    h.settle(a, b, c)
    gen = a["generation_id"]
    assert a["protocol_name"] == "rr"  # two votes for rr, one for range
    for r, iid in ((b, "b"), (c, "c")):
        h.sync(r["member_id"], gen, iid=iid)
    h.sync(a["member_id"], gen, {}, iid="a")
    again = h.join(iid="b", protocols=(("range", subscription("t")), ("rr", b"")))
    assert not again.done and h.state() is GroupState.PREPARING_REBALANCE


# -- MemberId "" + unknown GroupInstanceId -------------------------------------------------------
def test_new_static_member_in_empty_is_added_without_member_id_required(h: Harness) -> None:
    r = h.join(iid="i", version=5)
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE
    h.advance(3000)
    assert r["member_id"] == "i-u1"


def test_new_static_member_in_stable_triggers_rebalance(h: Harness) -> None:
    h.stable_group(2)
    r = h.join(iid="new")
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


# -- pending MemberId (second step) --------------------------------------------------------------
def test_pending_member_second_join_in_empty_starts_initial_delay(h: Harness) -> None:
    member_id, r = h.join_new()
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE
    assert h.mgr.group("g").pending_members == set()
    assert "pending:g:" + member_id not in h.timers


def test_pending_member_second_join_in_stable_triggers_rebalance(h: Harness) -> None:
    h.stable_group(2)
    _, r = h.join_new()
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


# -- known member --------------------------------------------------------------------------------
def test_known_member_id_in_empty_group_is_unknown(h: Harness) -> None:
    h.join(version=4)  # creates the (Empty) group with a pending member only
    assert h.join("c-u999").error == UNKNOWN_MEMBER_ID


def test_known_member_rejoin_in_preparing_rebalance_updates_and_parks(h: Harness) -> None:
    ids = _preparing(h)
    r = h.join(ids[1], session=20_000)
    assert not r.done
    assert h.mgr.group("g").members[ids[1]].session_timeout_ms == 20_000


def test_known_member_same_metadata_in_completing_rebalance_gets_current_generation(h: Harness) -> None:
    ids, gen = _completing(h)
    leader = h.join(ids[0])
    follower = h.join(ids[1])
    assert leader.error == follower.error == 0
    assert leader["generation_id"] == follower["generation_id"] == gen
    assert len(leader["members"]) == 2 and follower["members"] == []
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_known_member_changed_metadata_in_completing_rebalance_triggers_rebalance(h: Harness) -> None:
    ids, _ = _completing(h)
    r = h.join(ids[1], protocols=(("range", subscription("t", "u")),))
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


def test_leader_rejoin_in_stable_triggers_rebalance(h: Harness) -> None:
    ids = h.stable_group(2)
    r = h.join(ids[0])
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


def test_follower_rejoin_in_stable_with_changed_metadata_triggers_rebalance(h: Harness) -> None:
    ids = h.stable_group(2)
    r = h.join(ids[1], protocols=(("range", subscription("t", "u")),))
    assert not r.done and h.state() is GroupState.PREPARING_REBALANCE


def test_follower_rejoin_in_stable_with_same_metadata_is_answered_immediately(h: Harness) -> None:
    ids = h.stable_group(2)
    r = h.join(ids[1])
    assert (
        r.error == 0 and r["members"] == [] and r["leader"] == ids[0] and r["generation_id"] == h.generation()
    )
    assert h.state() is GroupState.STABLE


def test_unknown_member_id_is_rejected_in_every_state(h: Harness) -> None:
    assert h.join("nobody").error == UNKNOWN_MEMBER_ID  # group missing
    h.stable_group(2)
    r = h.join("nobody")
    assert r.error == UNKNOWN_MEMBER_ID and r["member_id"] == "nobody"


def test_fenced_static_member_join_with_stale_member_id(h: Harness) -> None:
    _static_stable(h)
    h.join(iid="b")  # replaced: b-u3
    assert h.join("b-u2", iid="b").error == FENCED_INSTANCE_ID


# -- entry checks --------------------------------------------------------------------------------
def test_empty_group_id_is_invalid(h: Harness) -> None:
    assert h.join(group="").error == INVALID_GROUP_ID


def test_session_timeout_outside_bounds_is_invalid(h: Harness) -> None:
    assert h.join(session=5999).error == INVALID_SESSION_TIMEOUT
    assert h.join(session=1_800_001).error == INVALID_SESSION_TIMEOUT
    assert h.join(session=6000, version=4).error == MEMBER_ID_REQUIRED


def test_inconsistent_protocol_type_or_no_common_protocol(h: Harness) -> None:
    assert h.join(version=3, protocols=()).error == INCONSISTENT_GROUP_PROTOCOL  # Empty needs protocols
    assert h.join(version=3, protocol_type="").error == INCONSISTENT_GROUP_PROTOCOL
    h.stable_group(1)
    assert h.join(version=3, protocol_type="connect").error == INCONSISTENT_GROUP_PROTOCOL
    assert h.join(version=3, protocols=(("sticky", b""),)).error == INCONSISTENT_GROUP_PROTOCOL


def test_protocol_selected_by_vote_among_protocols_all_members_support(h: Harness) -> None:
    h.join(version=3, protocols=(("sticky", b"1"), ("range", b"1"), ("rr", b"1")))
    h.join(version=3, protocols=(("range", b"2"), ("rr", b"2")))
    r = h.join(version=3, protocols=(("rr", b"3"), ("range", b"3")))
    h.settle(r)
    assert r["protocol_name"] == "range"  # sticky unsupported by all; range gets 2 votes
    assert r["members"] == []  # the third member is a follower


def test_leader_gets_every_members_metadata_for_the_selected_protocol(h: Harness) -> None:
    a = h.join(version=3, protocols=(("range", b"a-range"), ("rr", b"a-rr")))
    b = h.join(version=3, protocols=(("rr", b"b-rr"), ("range", b"b-range")))
    h.settle(a, b)
    assert a["leader"] == a["member_id"] == "c-u1"  # first member is leader
    assert b["leader"] == "c-u1" and b["members"] == []
    chosen = a["protocol_name"]
    assert {m["member_id"]: m["metadata"] for m in a["members"]} == {
        "c-u1": b"a-" + chosen.encode(),
        "c-u2": b"b-" + chosen.encode(),
    }


def test_join_response_protocol_fields_follow_version(h: Harness) -> None:
    r6 = h.join(version=3)
    h.advance(3000)
    assert r6["protocol_name"] == "range" and "protocol_type" not in r6.value
    err6 = h.join(group="", version=6)
    assert err6["protocol_name"] == "" and "protocol_type" not in err6.value
    err7 = h.join(group="", version=7)
    assert err7["protocol_name"] is None and err7["protocol_type"] is None


def test_group_max_size_rejects_new_members_when_full() -> None:
    h = Harness(group_max_size=2)
    h.stable_group(2)
    r = h.join(version=3)
    assert r.error == GROUP_MAX_SIZE_REACHED and r["member_id"] == ""
    assert h.state() is GroupState.STABLE


def test_group_max_size_in_preparing_rebalance_counts_parked_joins() -> None:
    h = Harness(group_max_size=1)
    first = h.join(version=3)
    second = h.join(version=3)
    assert not first.done and second.error == GROUP_MAX_SIZE_REACHED


def test_a_pending_member_refused_for_max_size_is_forgotten_and_the_join_phase_completes() -> None:
    # ClassicGroup.remove drops pending members too; the join phase is re-checked at once
    h = Harness(group_max_size=1, group_initial_rebalance_delay_ms=0)
    a_id = h.join(version=5)["member_id"]  # MEMBER_ID_REQUIRED while Empty: both accepted
    b_id = h.join(version=5)["member_id"]
    a = h.join(a_id, version=5)  # PreparingRebalance, waiting for pending member b
    assert not a.done
    b = h.join(b_id, version=5)
    assert b.error == GROUP_MAX_SIZE_REACHED and b["member_id"] == ""
    h.advance(100)  # the (zero) initial delay's timer; b's pending expiry is 10 s away
    assert a.done and a.error == 0 and a["generation_id"] == 1  # not after b's session timeout
    assert b_id not in h.mgr.group("g").pending_members


def test_join_while_loading_answers_load_in_progress() -> None:
    h = Harness(loaded=False)
    assert h.join().error == COORDINATOR_LOAD_IN_PROGRESS


def test_join_after_shutdown_answers_coordinator_not_available(h: Harness) -> None:
    h.mgr.shutdown()
    assert h.join().error == COORDINATOR_NOT_AVAILABLE


def test_join_while_loading_checks_group_id_and_session_timeout_first() -> None:
    # GroupCoordinatorService.joinGroup: not active, "", the session-timeout bounds, and only then
    # the runtime, which refuses a loading partition (CoordinatorRuntime.withActiveContextOrThrow).
    h = Harness(loaded=False)
    assert h.join(group="").error == INVALID_GROUP_ID
    assert h.join(session=5999).error == INVALID_SESSION_TIMEOUT
    assert h.join(group="", session=5999).error == INVALID_GROUP_ID
    assert h.join().error == COORDINATOR_LOAD_IN_PROGRESS
    h.mgr.on_loaded()
    h.mgr.shutdown()
    assert h.join(group="", session=5999).error == COORDINATOR_NOT_AVAILABLE  # inactive comes first


def test_protocol_type_is_checked_in_a_memberless_group_that_is_not_empty(h: Harness) -> None:
    # ClassicGroup.supportsProtocols waives the type only in state Empty. A rebalance held by a
    # pending member whose only member leaves waits in PreparingRebalance with no members.
    (a,) = h.stable_group(1)
    assert h.join(version=4, client_id="b").error == MEMBER_ID_REQUIRED  # pending: holds the join phase
    parked = h.join(a)  # the leader rejoins: a rebalance
    assert not parked.done and h.leave(a).error == 0 and parked.error == UNKNOWN_MEMBER_ID
    group = h.mgr.group("g")
    assert group is not None and h.state() is GroupState.PREPARING_REBALANCE and not group.members
    assert h.join(version=4, protocol_type="connect").error == INCONSISTENT_GROUP_PROTOCOL
    # any protocol name is fine (no member to disagree), but still the group's type
    assert h.join(version=4, protocols=(("sticky", b""),)).error == MEMBER_ID_REQUIRED
