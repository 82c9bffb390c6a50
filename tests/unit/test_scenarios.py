"""Whole conversations, as real clients have them (reference §11 and §4.12)."""

from __future__ import annotations

from kcoord.coordinator.groups import GroupState
from tests.unit.conftest import Harness
from tests.unit.fakes import subscription

RANGE_FIRST = (("range", subscription("t")), ("cooperative-sticky", subscription("t")))


def test_worked_example_two_dynamic_consumers(h: Harness) -> None:
    # C1: MEMBER_ID_REQUIRED, then parked for the initial delay; completes alone as leader.
    c1, j1 = h.join_new(version=5, client_id="c1", session=45_000, rebalance=300_000, protocols=RANGE_FIRST)
    h.advance(3_000)
    assert j1["generation_id"] == 1 and j1["leader"] == c1 and j1["protocol_name"] == "range"
    assert h.sync(c1, 1, {c1: b"p0,p1"})["assignment"] == b"p0,p1"
    # C2 joins a Stable group: rebalance with the rebalance timeout, C1 learns by heartbeat.
    c2, j2 = h.join_new(version=5, client_id="c2", session=45_000, rebalance=300_000, protocols=RANGE_FIRST)
    assert not j2.done
    assert h.heartbeat(c1, 1).error == 27
    j1 = h.join(c1, session=45_000, rebalance=300_000, protocols=RANGE_FIRST)
    assert j1["generation_id"] == j2["generation_id"] == 2
    assert len(j1["members"]) == 2 and j2["members"] == [] and j2["leader"] == c1
    s2 = h.sync(c2, 2)
    assert not s2.done
    s1 = h.sync(c1, 2, {c1: b"p0", c2: b"p1"})
    assert s1["assignment"] == b"p0" and s2["assignment"] == b"p1"
    # C2 leaves: C1 rejoins alone -> generation 3.
    assert h.leave(c2)["members"][0]["error_code"] == 0
    assert h.heartbeat(c1, 2).error == 27
    j1 = h.join(c1, session=45_000, rebalance=300_000, protocols=RANGE_FIRST)
    assert j1["generation_id"] == 3 and [m["member_id"] for m in j1["members"]] == [c1]


def test_back_to_back_cooperative_rebalances(h0: Harness) -> None:
    coop = (("cooperative-sticky", subscription("t")),)
    ids = h0.stable_group(2, protocols=coop)
    for _ in range(3):  # revoke, then immediately rejoin: the coordinator just runs another rebalance
        joins = [h0.join(m, protocols=coop) for m in ids]
        assert all(j.done and j.error == 0 for j in joins)
        gen = joins[0]["generation_id"]
        leader = joins[0]["leader"]
        follower = next(m for m in ids if m != leader)
        h0.sync(follower, gen)
        h0.sync(leader, gen, {m: m.encode() for m in ids})
        assert h0.state() is GroupState.STABLE and h0.mgr.group("g").protocol_name == "cooperative-sticky"


def test_kafka_python_style_v0_to_v3_clients_join_without_member_id_required(h0: Harness) -> None:
    a = h0.join(version=1, client_id="kp")
    b = h0.join(version=2, client_id="kp")
    h0.settle(a, b)
    assert a.error == b.error == 0 and {a["member_id"], b["member_id"]} == {"kp-u1", "kp-u2"}


def test_member_that_loses_its_join_response_gets_it_again(h: Harness) -> None:
    ids = h.stable_group(2)
    [h.join(m) for m in ids]
    again = h.join(ids[0])
    assert again["generation_id"] == h.generation() and len(again["members"]) == 2
