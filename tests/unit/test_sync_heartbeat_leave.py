"""SyncGroup, Heartbeat and LeaveGroup in every state (reference §3.3, §5.1-5.3)."""

from __future__ import annotations

from kcoord.coordinator.groups import GroupMetadataRecord, GroupState
from tests.unit.conftest import Harness

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
FENCED_INSTANCE_ID = 82
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15


def _completing(h: Harness) -> tuple[list[str], int]:
    ids = h.stable_group(2)
    rejoin = [h.join(m) for m in ids]
    assert all(r.done for r in rejoin) and h.state() is GroupState.COMPLETING_REBALANCE
    return ids, h.generation()


# -- SyncGroup -----------------------------------------------------------------------------------
def test_sync_in_empty_group_is_unknown_member(h: Harness) -> None:
    h.join(version=4)
    assert h.sync("c-u1", 0).error == UNKNOWN_MEMBER_ID
    assert h.sync("x", 0, group="missing").error == UNKNOWN_MEMBER_ID


def test_sync_in_preparing_rebalance_is_rebalance_in_progress(h: Harness) -> None:
    ids = h.stable_group(2)
    h.join(ids[0])
    assert h.state() is GroupState.PREPARING_REBALANCE
    r = h.sync(ids[1], h.generation())
    assert r.error == REBALANCE_IN_PROGRESS and r["assignment"] == b""


def test_follower_sync_in_completing_rebalance_waits_for_the_leader(h: Harness) -> None:
    ids, gen = _completing(h)
    follower = h.sync(ids[1], gen)
    assert not follower.done
    leader = h.sync(ids[0], gen, {ids[0]: b"L", ids[1]: b"F"})
    assert leader["assignment"] == b"L" and follower["assignment"] == b"F"
    assert h.state() is GroupState.STABLE


def test_leader_sync_persists_assignment_and_fills_missing_members_with_empty_bytes(h: Harness) -> None:
    ids, gen = _completing(h)
    follower = h.sync(ids[1], gen)
    h.sync(ids[0], gen, {ids[0]: b"L", "not-a-member": b"X"})
    assert follower.error == NONE and follower["assignment"] == b""
    record = h.log.records[-1]
    assert isinstance(record, GroupMetadataRecord) and record.generation_id == gen
    assert {m.member_id: m.assignment for m in record.members} == {ids[0]: b"L", ids[1]: b""}


def test_sync_in_stable_returns_the_current_assignment(h: Harness) -> None:
    ids = h.stable_group(2)
    r = h.sync(ids[1], h.generation())
    assert r.error == NONE and r["assignment"] == ids[1].encode()


def test_sync_v5_returns_protocol_and_checks_it(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    ok = h.sync(ids[1], gen, version=5)
    assert ok["protocol_type"] == "consumer" and ok["protocol_name"] == "range"
    assert h.sync(ids[1], gen, version=5, protocol_name="roundrobin").error == INCONSISTENT_GROUP_PROTOCOL
    bad = h.sync(ids[1], gen, version=5, protocol_type=None)
    assert bad.error == INCONSISTENT_GROUP_PROTOCOL and bad["protocol_type"] is None
    assert "protocol_type" not in h.sync(ids[1], gen, version=4).value


def test_sync_with_wrong_generation_is_illegal_generation(h: Harness) -> None:
    ids = h.stable_group(2)
    assert h.sync(ids[1], h.generation() + 1).error == ILLEGAL_GENERATION


def test_sync_with_unknown_member_or_fenced_instance(h: Harness) -> None:
    ids = h.stable_group(2)
    assert h.sync("nobody", h.generation()).error == UNKNOWN_MEMBER_ID
    assert h.sync(ids[0], h.generation(), iid="unknown").error == UNKNOWN_MEMBER_ID
    a = h.join(iid="s")
    h.settle(a)
    assert h.sync(ids[0], h.generation(), iid="s").error == FENCED_INSTANCE_ID


def test_sync_with_empty_group_id_is_invalid(h: Harness) -> None:
    assert h.sync("m", 1, group="").error == INVALID_GROUP_ID


def test_sync_while_loading_is_rebalance_in_progress() -> None:
    h = Harness(loaded=False)
    assert h.sync("m", 1).error == REBALANCE_IN_PROGRESS


def test_empty_group_id_is_invalid_while_loading_and_not_available_after_shutdown() -> None:
    # GroupCoordinatorService.syncGroup/heartbeat/leaveGroup: not active -> COORDINATOR_NOT_AVAILABLE,
    # then "" -> INVALID_GROUP_ID, both before the runtime's loading check.
    h = Harness(loaded=False)
    assert h.sync("m", 1, group="").error == INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="").error == INVALID_GROUP_ID
    r = h.leave("m", group="")
    assert r.error == INVALID_GROUP_ID and r["members"] == []
    assert h.sync("m", 1).error == REBALANCE_IN_PROGRESS  # a named group: loading
    assert h.heartbeat("m", 1).error == NONE
    assert h.leave("m").error == COORDINATOR_LOAD_IN_PROGRESS
    h.mgr.on_loaded()
    h.mgr.shutdown()
    assert h.sync("m", 1, group="").error == COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat("m", 1, group="").error == COORDINATOR_NOT_AVAILABLE
    assert h.leave("m", group="").error == COORDINATOR_NOT_AVAILABLE


# -- Heartbeat -----------------------------------------------------------------------------------
def test_heartbeat_in_empty_group_is_unknown_member(h: Harness) -> None:
    h.join(version=4)
    assert h.heartbeat("c-u1", 0).error == UNKNOWN_MEMBER_ID


def test_heartbeat_for_missing_group_is_unknown_member(h: Harness) -> None:
    assert h.heartbeat("m", 1, group="missing").error == UNKNOWN_MEMBER_ID


def test_heartbeat_in_preparing_rebalance_is_rebalance_in_progress_and_refreshes_session(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    h.join(ids[0])
    h.advance(9_000)
    assert h.heartbeat(ids[1], gen).error == REBALANCE_IN_PROGRESS
    assert h.timers.deadline(f"session:g:{ids[1]}") == h.clock.now_ms() + 10_000


def test_heartbeat_in_completing_rebalance_is_none(h: Harness) -> None:
    ids, gen = _completing(h)
    assert h.heartbeat(ids[1], gen).error == NONE


def test_heartbeat_in_stable_is_none_and_refreshes_session(h: Harness) -> None:
    ids = h.stable_group(2)
    h.advance(9_000)
    assert h.heartbeat(ids[1], h.generation()).error == NONE
    assert h.timers.deadline(f"session:g:{ids[1]}") == h.clock.now_ms() + 10_000


def test_heartbeat_with_wrong_generation_is_illegal_generation(h: Harness) -> None:
    ids = h.stable_group(2)
    assert h.heartbeat(ids[1], h.generation() - 1).error == ILLEGAL_GENERATION


def test_heartbeat_with_replaced_static_member_id_is_fenced(h: Harness) -> None:
    a = h.join(iid="s")
    h.settle(a)
    h.sync(a["member_id"], a["generation_id"], {}, iid="s")
    h.join(iid="s")  # replaces the member id
    assert h.heartbeat(a["member_id"], a["generation_id"], iid="s").error == FENCED_INSTANCE_ID


def test_heartbeat_while_loading_is_none_and_after_shutdown_not_available() -> None:
    h = Harness(loaded=False)
    assert h.heartbeat("m", 1).error == NONE
    h.mgr.on_loaded()
    h.mgr.shutdown()
    assert h.heartbeat("m", 1).error == COORDINATOR_NOT_AVAILABLE


# -- LeaveGroup ----------------------------------------------------------------------------------
def test_leave_from_empty_group_is_unknown_member_per_entry(h: Harness) -> None:
    h.join(version=4)
    r = h.leave("nobody")
    assert r.error == NONE and r["members"] == [
        {"member_id": "nobody", "group_instance_id": None, "error_code": 25}
    ]


def test_leave_from_missing_group_is_unknown_member_per_entry(h: Harness) -> None:
    r = h.leave("a", "b", group="missing")
    assert r.error == NONE and [m["error_code"] for m in r["members"]] == [25, 25]


def test_leave_in_preparing_rebalance_completes_the_join_when_the_rest_rejoined(h: Harness) -> None:
    ids = h.stable_group(3)
    rejoins = [h.join(ids[0]), h.join(ids[1])]
    assert h.state() is GroupState.PREPARING_REBALANCE
    r = h.leave(ids[2])
    assert r["members"][0]["error_code"] == NONE
    assert all(j.done and j.error == NONE for j in rejoins)  # no wait for the rebalance timeout
    assert h.state() is GroupState.COMPLETING_REBALANCE and len(rejoins[0]["members"]) == 2


def test_leave_in_completing_rebalance_triggers_rebalance(h: Harness) -> None:
    ids, gen = _completing(h)
    parked = h.sync(ids[1], gen)
    h.leave(ids[0])
    assert parked.error == REBALANCE_IN_PROGRESS
    assert h.state() is GroupState.PREPARING_REBALANCE


def test_leave_in_stable_triggers_rebalance(h: Harness) -> None:
    ids = h.stable_group(2)
    h.leave(ids[1])
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert f"session:g:{ids[1]}" not in h.timers


def test_last_member_leaving_stable_group_goes_to_empty_through_preparing(h: Harness) -> None:
    ids = h.stable_group(1)
    gen = h.generation()
    h.leave(ids[0])
    assert h.state() is GroupState.EMPTY and h.generation() == gen + 1
    record = h.log.records[-1]
    assert (
        isinstance(record, GroupMetadataRecord) and record.members == () and record.generation_id == gen + 1
    )


def test_leave_v0_to_v2_maps_member_error_to_top_level(h: Harness) -> None:
    ids = h.stable_group(2)
    assert h.leave("nobody", version=1).value == {"error_code": UNKNOWN_MEMBER_ID}
    assert h.leave(ids[1], version=0).value == {"error_code": NONE}


def test_leave_batch_removes_static_member_by_instance_id_and_echoes_entries(h: Harness) -> None:
    a = h.join(iid="s1")
    b = h.join(iid="s2")
    h.settle(a, b)
    r = h.leave(("", "s1"), ("", "nope"), (b["member_id"], "s1"), version=5)
    assert [m["error_code"] for m in r["members"]] == [NONE, UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID]
    assert r["members"][0] == {"member_id": "", "group_instance_id": "s1", "error_code": NONE}
    assert a["member_id"] not in h.mgr.group("g").members


def test_leave_with_fenced_instance_id(h: Harness) -> None:
    a = h.join(iid="s1")
    b = h.join(iid="s2")
    h.settle(a, b)
    r = h.leave((b["member_id"], "s1"))
    assert r["members"][0]["error_code"] == FENCED_INSTANCE_ID


def test_leave_of_pending_member_drops_it(h: Harness) -> None:
    first = h.join(version=4)
    pending = first["member_id"]
    assert h.leave(pending)["members"][0]["error_code"] == NONE
    assert h.mgr.group("g").pending_members == set()
    assert f"pending:g:{pending}" not in h.timers


def test_leave_answers_a_parked_join_with_unknown_member(h: Harness) -> None:
    member_id, parked = h.join_new()
    h.leave(member_id)
    assert parked.error == UNKNOWN_MEMBER_ID and parked["member_id"] == ""


def test_leave_with_empty_group_id_is_invalid(h: Harness) -> None:
    r = h.leave("m", group="")
    assert r.error == INVALID_GROUP_ID and r["members"] == []


def test_sync_v5_without_protocol_type_or_name_is_inconsistent_before_any_other_check() -> None:
    # KafkaApis.handleSyncGroupRequest checks areMandatoryProtocolTypeAndNamePresent before the
    # coordinator: before loading, group id, group and member checks.
    loading = Harness(loaded=False)
    assert loading.sync("m", 1, version=5, protocol_type=None).error == INCONSISTENT_GROUP_PROTOCOL
    h = Harness()
    assert h.sync("nobody", 9, group="", version=5, protocol_name=None).error == INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("nobody", 9, version=5, protocol_type=None).error == INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("nobody", 9, version=4, protocol_type=None).error == UNKNOWN_MEMBER_ID  # v4: no such check
