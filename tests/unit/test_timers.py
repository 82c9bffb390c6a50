"""Every timer path with a fake clock: initial delay, rebalance timeout, sessions, pending members,
pending sync, offset expiry (reference §4.5, §4.6, §6, §8.5)."""

from __future__ import annotations

from kcoord.coordinator.groups import GroupState, GroupTombstone, OffsetTombstone
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from tests.unit.conftest import Harness
from tests.unit.fakes import subscription

UNKNOWN_MEMBER_ID = 25
DAY = 24 * 3600 * 1000


# -- FakeTimers ----------------------------------------------------------------------------------
def test_fake_timers_fire_in_deadline_order_and_replace_by_key() -> None:
    clock = FakeClock(0)
    timers = FakeTimers(clock)
    fired: list[tuple[str, int]] = []
    timers.schedule("b", 20, lambda: fired.append(("b", clock.now_ms())))
    timers.schedule("a", 10, lambda: fired.append(("a", clock.now_ms())))
    timers.schedule("c", 5, lambda: fired.append(("c", clock.now_ms())))
    timers.schedule("c", 30, lambda: fired.append(("c2", clock.now_ms())))  # replaces
    timers.cancel("b")
    timers.advance(25)
    assert fired == [("a", 10)] and clock.now_ms() == 25
    timers.advance(5)
    assert fired[-1] == ("c2", 30)


def test_fake_timers_fire_timers_scheduled_by_callbacks_within_the_window() -> None:
    clock = FakeClock(0)
    timers = FakeTimers(clock)
    fired: list[int] = []
    timers.schedule("x", 10, lambda: timers.schedule("y", 10, lambda: fired.append(clock.now_ms())))
    timers.advance(30)
    assert fired == [20]


# -- initial delayed join (KIP-134) --------------------------------------------------------------
def test_initial_delay_completes_a_lone_first_member_after_the_delay(h: Harness) -> None:
    _, r = h.join_new()
    h.advance(2_999)
    assert not r.done
    h.advance(1)
    assert r.error == 0 and h.state() is GroupState.COMPLETING_REBALANCE


def test_initial_delay_is_extended_for_each_new_member(h: Harness) -> None:
    _, first = h.join_new()
    h.advance(2_000)
    _, second = h.join_new()
    h.advance(1_000)  # first timer fires at 3000: a new member arrived -> another 3000
    assert not first.done
    h.advance(2_999)
    assert not first.done
    h.advance(1)
    assert first.done and second.done and first["generation_id"] == 1


def test_initial_delay_extension_is_capped_by_the_rebalance_timeout() -> None:
    h = Harness(group_initial_rebalance_delay_ms=3_000)
    _, first = h.join_new(rebalance=7_000)
    waited = 0
    while not first.done:  # a new member every 1000 ms keeps extending until the cap
        h.join_new(rebalance=7_000)
        h.advance(1_000)
        waited += 1_000
    # delay 3000, remaining 4000 -> +3000 (remaining 1000) -> +1000 (remaining 0) -> complete
    assert waited == 7_000


def test_initial_delay_zero_completes_on_the_next_tick(h0: Harness) -> None:
    _, r = h0.join_new()
    assert not r.done
    h0.advance(0)
    assert r.error == 0


def test_initial_delay_applies_again_when_an_emptied_group_restarts(h: Harness) -> None:
    ids = h.stable_group(1)
    h.leave(ids[0])
    assert h.state() is GroupState.EMPTY
    _, r = h.join_new()
    h.advance(2_999)
    assert not r.done
    h.advance(1)
    assert r.done and r["generation_id"] == 3


# -- rebalance timeout ---------------------------------------------------------------------------
def test_rebalance_timeout_removes_dynamic_members_that_did_not_rejoin(h: Harness) -> None:
    ids = h.stable_group(3, rebalance=20_000, session=30_000)
    gen = h.generation()
    rejoin = h.join(ids[0], rebalance=20_000, session=30_000)
    for _ in range(19):
        h.advance(1_000)
        assert h.heartbeat(ids[1], gen).error == 27  # heartbeating does not save a non-rejoiner
    assert not rejoin.done
    h.advance(1_000)
    assert rejoin.error == 0 and [m["member_id"] for m in rejoin["members"]] == [ids[0]]
    assert set(h.mgr.group("g").members) == {ids[0]}
    assert h.heartbeat(ids[2], gen).error == UNKNOWN_MEMBER_ID


def test_rebalance_timeout_keeps_static_members_that_did_not_rejoin(h: Harness) -> None:
    a = h.join(iid="a", session=60_000)
    b = h.join(iid="b", session=60_000)
    h.settle(a, b)
    gen = a["generation_id"]
    h.sync(b["member_id"], gen, iid="b")
    h.sync(a["member_id"], gen, {}, iid="a")
    rejoin = h.join(a["member_id"], iid="a", session=60_000)
    h.advance(30_000)
    assert rejoin.error == 0 and {m["member_id"] for m in rejoin["members"]} == {
        a["member_id"],
        b["member_id"],
    }


def test_join_phase_waits_again_when_only_non_rejoined_static_members_remain(h: Harness) -> None:
    a = h.join(iid="a", session=100_000)
    h.settle(a)
    h.sync(a["member_id"], a["generation_id"], {}, iid="a")
    h.leave(("", "nobody"))
    group = h.mgr.group("g")
    h.join(version=3, client_id="dyn")  # new dynamic member; then it leaves before completion
    h.leave("dyn-u2")
    h.advance(30_000)
    assert group.state is GroupState.PREPARING_REBALANCE  # static member a never rejoined: wait again
    assert "join:g" in h.timers


# -- sessions ------------------------------------------------------------------------------------
def test_session_expiry_in_stable_removes_the_member_and_rebalances(h: Harness) -> None:
    ids = h.stable_group(2)
    gen = h.generation()
    for _ in range(2):
        h.advance(4_000)
        assert h.heartbeat(ids[0], gen).error == 0
    assert ids[1] in h.mgr.group("g").members
    h.advance(2_000)
    assert ids[1] not in h.mgr.group("g").members
    assert h.state() is GroupState.PREPARING_REBALANCE


def test_session_expiry_in_completing_rebalance_cancels_parked_syncs(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    gen = h.generation()
    parked = h.sync(ids[1], gen)
    h.advance(10_000)  # the leader neither syncs nor heartbeats
    assert parked.error == 27 and h.state() is GroupState.PREPARING_REBALANCE
    assert ids[0] not in h.mgr.group("g").members


def test_parked_rejoined_member_is_not_expired_by_its_session(h: Harness) -> None:
    ids = h.stable_group(2, session=6_000, rebalance=20_000)
    gen = h.generation()
    rejoin = h.join(ids[0], session=6_000, rebalance=20_000)  # parked, and never heartbeats
    for _ in range(15):
        h.advance(1_000)
        assert h.heartbeat(ids[1], gen).error == 27  # alive, but never rejoins
    assert ids[0] in h.mgr.group("g").members and not rejoin.done
    h.advance(5_000)
    assert rejoin.error == 0  # completed by the rebalance timeout; the non-rejoiner was removed
    assert set(h.mgr.group("g").members) == {ids[0]}


def test_new_member_parked_in_join_expires_after_the_new_member_timeout() -> None:
    h = Harness()
    ids = h.stable_group(1, session=300_000, rebalance=600_000)
    gen = h.generation()
    _, parked = h.join_new(session=300_000, rebalance=600_000)  # ids[0] heartbeats but never rejoins
    for _ in range(3):
        h.advance(100_000)
        h.heartbeat(ids[0], gen)
    assert parked.error == UNKNOWN_MEMBER_ID and parked["member_id"] == ""
    assert ids[0] in h.mgr.group("g").members


def test_pending_member_expires_after_its_session_timeout_and_unblocks_the_join(h: Harness) -> None:
    ids = h.stable_group(1)
    first = h.join(version=4, session=8_000)  # pending member that never comes back
    rejoin = h.join(ids[0])
    assert not rejoin.done and h.mgr.group("g").pending_members  # waits for the pending member
    h.advance(8_000)
    assert rejoin.error == 0 and h.mgr.group("g").pending_members == set()
    assert h.join(first["member_id"]).error == UNKNOWN_MEMBER_ID


def test_pending_sync_timeout_removes_members_that_never_synced(h: Harness) -> None:
    ids = h.stable_group(2, session=60_000, rebalance=20_000)
    [h.join(m, session=60_000, rebalance=20_000) for m in ids]
    gen = h.generation()
    assert h.sync(ids[0], gen, {}).error == 0  # the leader syncs: Stable, ids[1] still pending
    for _ in range(3):
        h.advance(5_000)
        assert h.heartbeat(ids[1], gen).error == 0  # heartbeats do not satisfy the sync timer
    h.advance(5_000)
    assert ids[1] not in h.mgr.group("g").members
    assert h.state() is GroupState.PREPARING_REBALANCE


def test_sync_timer_is_cancelled_once_every_member_synced(h: Harness) -> None:
    h.stable_group(2)
    assert "sync:g" not in h.timers


# -- offset expiry (KIP-211) ---------------------------------------------------------------------
def test_offsets_of_an_empty_group_expire_retention_after_it_became_empty() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=600_000)
    ids = h.stable_group(1, session=1_800_000)
    h.commit({("t", 0): 1}, member_id=ids[0], generation=h.generation())
    for _ in range(43):  # half a day as a live member
        h.advance(1_000_000)
        assert h.heartbeat(ids[0], h.generation()).error == 0
    h.leave(ids[0])
    h.advance(DAY - 600_000)
    assert h.mgr.committed_offsets("g")  # counted from when the group became Empty
    h.advance(1_200_000)
    assert h.mgr.committed_offsets("g") == {}
    assert h.mgr.group("g") is None
    assert h.log.records[-2:] == [OffsetTombstone("g", "t", 0), GroupTombstone("g")]


def test_subscribed_offsets_of_a_stable_consumer_group_never_expire(h: Harness) -> None:
    h = Harness(offsets_retention_ms=DAY)
    ids = h.stable_group(1, session=1_800_000)
    h.commit({("t", 0): 1, ("gone", 0): 2}, member_id=ids[0], generation=h.generation())
    for _ in range(2 * DAY // 1_000_000):
        h.advance(1_000_000)
        assert h.heartbeat(ids[0], h.generation()).error == 0
    assert list(h.mgr.committed_offsets("g")) == [("t", 0)]  # the unsubscribed topic expired


def test_simple_group_offsets_expire_per_commit_timestamp() -> None:
    h = Harness(offsets_retention_ms=DAY)
    h.commit({("t", 0): 1})
    h.advance(DAY // 2)
    h.commit({("t", 1): 1})
    h.advance(DAY // 2 + 600_000)
    assert list(h.mgr.committed_offsets("g")) == [("t", 1)]
    h.advance(DAY // 2)
    assert h.mgr.group("g") is None  # Empty without offsets: deleted
    assert h.log.of_type(GroupTombstone)  # even at generation 0, as Kafka's Java coordinator


def test_explicit_retention_from_v2_commit_overrides_the_default() -> None:
    h = Harness(offsets_retention_ms=DAY)
    h.commit({("t", 0): 1}, version=2, retention_ms=60_000)
    h.mgr.expire_offsets()
    assert h.mgr.committed_offsets("g")
    h.advance(60_000)
    h.mgr.expire_offsets()
    assert h.mgr.committed_offsets("g") == {}


def test_offsets_of_a_rebalancing_group_never_expire() -> None:
    h = Harness(offsets_retention_ms=DAY)
    ids = h.stable_group(1, session=1_800_000, rebalance=1_800_000)
    h.commit({("other", 0): 1}, member_id=ids[0], generation=h.generation())
    h.clock.advance(2 * DAY)
    h.join(ids[0], session=1_800_000, rebalance=1_800_000)
    assert h.state() is GroupState.PREPARING_REBALANCE or h.state() is GroupState.COMPLETING_REBALANCE
    h.mgr.expire_offsets()
    assert h.mgr.committed_offsets("g")


def test_in_flight_commit_is_never_expired() -> None:
    h = Harness(offsets_retention_ms=DAY)
    h.commit({("t", 0): 1})
    h.clock.advance(2 * DAY)
    h.log.hold = True
    pending = h.commit({("t", 0): 2})
    h.mgr.expire_offsets()
    h.log.release()
    assert pending.done and h.mgr.committed_offsets("g")[("t", 0)].offset == 2
    assert not h.log.of_type(OffsetTombstone)


def test_delete_topics_writes_tombstones_for_every_group(h: Harness) -> None:
    h.commit({("t", 0): 1, ("u", 0): 1}, group="a")
    h.commit({("t", 1): 1}, group="b")
    h.mgr.delete_topics(["t"])
    assert set(h.log.of_type(OffsetTombstone)) == {OffsetTombstone("a", "t", 0), OffsetTombstone("b", "t", 1)}
    assert list(h.mgr.committed_offsets("a")) == [("u", 0)] and h.mgr.committed_offsets("b") == {}


def test_consumer_subscription_decoding_feeds_offset_delete(h: Harness) -> None:
    h.stable_group(1, protocols=(("range", subscription("a", "b", version=3)),))
    assert h.mgr.group("g").subscribed_topics == frozenset({"a", "b"})


def test_an_expiry_pass_whose_write_fails_keeps_the_group_and_the_next_pass_deletes_it() -> None:
    # CoordinatorRuntime reverts its timeline when a write fails (GroupMetadataManager's
    # cleanupGroupMetadata runs as a write operation): the group is not dropped without its tombstone.
    h = Harness(offsets_retention_ms=DAY)
    h.commit({("t", 0): 1})
    h.log.fail_with = OSError("disk full")
    h.advance(DAY + 600_000)
    assert h.state() is GroupState.EMPTY and h.mgr.committed_offsets("g")
    h.log.fail_with = None
    h.mgr.expire_offsets()
    assert h.mgr.group("g") is None and h.mgr.committed_offsets("g") == {}
    assert h.log.records[-2:] == [OffsetTombstone("g", "t", 0), GroupTombstone("g")]
