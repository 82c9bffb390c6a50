"""Online migration between the classic and the consumer protocol (KIP-848), with a fake clock:
classic members inside a consumer group, the upgrade of a classic group when a consumer-protocol
member joins it, and the downgrade when the last one leaves (Kafka's GroupMetadataManager
classicGroup*ToConsumerGroup, convertToConsumerGroup, convertToClassicGroup)."""

from __future__ import annotations

from typing import Any

from kcoord.coordinator.groups import GroupConfig, GroupManager, GroupState
from kcoord.coordinator.groups.consumer.model import ConsumerGroupState
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.member import Parked
from kcoord.coordinator.groups.responses import JoinAnswer, SyncAnswer
from kcoord.coordinator.groups.sync import SyncRequest
from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.protocol.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from tests.unit.test_consumer_heartbeat import T1, Cluster, partitions, snapshot


def subscription(*topics: str, owned: dict[str, list[int]] | None = None) -> bytes:
    owned_rows = [{"topic": t, "partitions": ps} for t, ps in (owned or {}).items()]
    return encode_subscription({"topics": list(topics), "user_data": None, "owned_partitions": owned_rows}, 1)


def join(
    c: Cluster, member_id: str = "", *, owned: dict[str, list[int]] | None = None, version: int = 5
) -> JoinAnswer:
    answers: list[JoinAnswer] = []
    protocols = (("range", subscription("t1", owned=owned)),)
    request = JoinRequest("g", member_id, None, 10_000, 30_000, "consumer", protocols, None, version,
                          "classic", "/127.0.0.1", answers.append)  # fmt: skip
    c.mgr.join_group(request)
    assert answers, "the join was parked"
    return answers[0]


def join_with_id(c: Cluster) -> JoinAnswer:
    first = join(c)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    return join(c, first.member_id)


def sync(
    c: Cluster, member_id: str, generation: int, assignments: dict[str, bytes] | None = None
) -> SyncAnswer:
    answers: list[SyncAnswer] = []
    request = SyncRequest("g", generation, member_id, None, ("consumer", "range"), assignments or {},
                          Parked(answers.append, 5))  # fmt: skip
    c.mgr.sync_group(request)
    assert answers, "the sync was parked"
    return answers[0]


def assigned(answer: SyncAnswer) -> set[int]:
    if not answer.assignment:
        return set()
    _, decoded = decode_assignment(answer.assignment)
    return {p for row in decoded["assigned_partitions"] if row["topic"] == "t1" for p in row["partitions"]}


def test_a_classic_member_joins_a_consumer_group_and_gets_partitions_once_released() -> None:
    c = Cluster()
    first = c.hb("m1", 0)
    joined = join_with_id(c)
    classic_id = joined.member_id
    # at the target epoch, owning nothing yet: the partitions it is to get are still m1's
    assert (joined.error, joined.generation_id, joined.leader, joined.protocol_name) == (
        ErrorCode.NONE,
        3,
        "",
        "range",
    )
    assert c.group().group_epoch == 3 and c.group().members[classic_id].classic is not None
    assert assigned(sync(c, classic_id, 3)) == set()
    assert c.mgr.heartbeat("g", 3, classic_id, None) == ErrorCode.NONE  # waiting on m1
    # m1 revokes half; then the classic member's heartbeat asks it to rejoin, and it gets them
    revoking = c.steady("m1", first)
    kept = partitions(revoking)
    assert len(kept) == 3
    c.hb("m1", 2, owned=[(T1, sorted(kept))], topics=None, rebalance_timeout_ms=-1)
    assert c.mgr.heartbeat("g", 3, classic_id, None) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = join(c, classic_id)
    assert rejoined.generation_id == 3
    assert assigned(sync(c, classic_id, 3)) == set(range(6)) - kept
    assert c.mgr.heartbeat("g", 3, classic_id, None) == ErrorCode.NONE
    assert c.group().state is ConsumerGroupState.STABLE


def test_classic_member_errors_inside_a_consumer_group() -> None:
    c = Cluster()
    c.hb("m1", 0)
    joined = join_with_id(c)
    assert c.mgr.heartbeat("g", 7, joined.member_id, None) == ErrorCode.ILLEGAL_GENERATION
    assert c.mgr.heartbeat("g", 1, "nobody", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        c.mgr.heartbeat("g", 1, "m1", None) == ErrorCode.UNKNOWN_MEMBER_ID
    )  # m1 speaks the consumer protocol
    assert sync(c, joined.member_id, 9).error == ErrorCode.ILLEGAL_GENERATION
    answers: list[JoinAnswer] = []
    c.mgr.join_group(JoinRequest("g", "", None, 10_000, 30_000, "other", (("x", b""),), None, 5, "c", "h",
                                 answers.append))  # fmt: skip
    assert answers[0].error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_classic_member_leaving_bumps_the_epoch() -> None:
    c = Cluster()
    c.hb("m1", 0)
    joined = join_with_id(c)
    error, entries = c.mgr.leave_group("g", [(joined.member_id, None), ("nobody", None)])
    assert error == ErrorCode.NONE
    assert [e[2] for e in entries] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert set(c.group().members) == {"m1"} and c.group().group_epoch == 4


def classic_group(c: Cluster, members: int = 2) -> list[str]:
    """A Stable classic group of `members`, t1's partitions split between them by the leader."""
    ids = []
    answers = []
    for _ in range(members):
        first = join(c)
        ids.append(first.member_id)
    parked: list[list[JoinAnswer]] = []
    for member_id in ids:
        box: list[JoinAnswer] = []
        protocols = (("range", subscription("t1")),)
        request = JoinRequest("g", member_id, None, 10_000, 30_000, "consumer", protocols, None, 5,
                              "classic", "/127.0.0.1", box.append)  # fmt: skip
        c.mgr.join_group(request)
        parked.append(box)
    for _ in range(40):  # the initial rebalance delay (KIP-134), extended by each new member
        if all(parked):
            break
        c.timers.advance(1_000)
    answers = [box[0] for box in parked]
    generation = answers[0].generation_id
    leader = next(a.member_id for a in answers if a.member_id == a.leader)
    split = {m: encode_assignment({"assigned_partitions": [{"topic": "t1", "partitions": [i, i + 2, i + 4]}],
                                   "user_data": None}, 1) for i, m in enumerate(ids)}  # fmt: skip
    for member_id in ids:
        assert sync(c, member_id, generation, split if member_id == leader else None).error == ErrorCode.NONE
    assert c.mgr.group("g").state is GroupState.STABLE
    return ids


def test_a_consumer_member_upgrades_a_classic_group_which_keeps_its_partitions() -> None:
    c = Cluster()
    ids = classic_group(c)
    generation = c.mgr.group("g").generation_id
    joined = c.hb("m9", 0)
    assert joined.error == ErrorCode.NONE
    assert c.mgr.group("g") is None
    group = c.group()
    assert group.members[ids[0]].member_epoch == generation and group.members[ids[0]].classic is not None
    assert {p for m in ids for p in group.members[m].assigned.get(T1, ())} == set(range(6))
    assert group.group_epoch == generation + 1
    # the classic members are asked to rejoin and give up what m9 is to get
    assert c.mgr.heartbeat("g", generation, ids[0], None) == ErrorCode.REBALANCE_IN_PROGRESS


def test_the_last_consumer_member_leaving_downgrades_the_group_to_classic() -> None:
    c = Cluster()
    ids = classic_group(c)
    c.hb("m9", 0)
    epoch = c.group().group_epoch
    c.hb("m9", -1, topics=None)
    assert c.group() is None
    classic = c.mgr.group("g")
    assert classic is not None and set(classic.members) == set(ids)
    # ClassicGroup.fromConsumerGroup: Stable at the group epoch, then a rebalance
    assert classic.state is GroupState.PREPARING_REBALANCE and classic.generation_id == epoch
    assert c.mgr.heartbeat("g", epoch, ids[0], None) == ErrorCode.REBALANCE_IN_PROGRESS


def test_migrations_replay_to_the_same_state() -> None:
    c = Cluster()
    classic_group(c)
    c.hb("m9", 0)
    upgraded = snapshot(c.group())
    fresh = replay(c)
    assert snapshot(fresh._rt.consumer_groups["g"]) == upgraded and fresh.group("g") is None
    c.hb("m9", -1, topics=None)
    fresh = replay(c)
    assert "g" not in fresh._rt.consumer_groups
    assert set(fresh.group("g").members) == set(c.mgr.group("g").members)


def replay(c: Cluster) -> Any:
    from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
    from tests.unit.fakes import MemoryRecordLog

    fresh = GroupManager(
        GroupConfig(), FakeClock(), FakeTimers(FakeClock()), MemoryRecordLog(), topics=c.topics
    )
    for record in c.log.records:
        fresh.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
    return fresh


def test_a_disabled_migration_policy_neither_upgrades_nor_downgrades() -> None:
    c = Cluster(consumer_migration_policy="disabled")
    classic_group(c)
    assert c.hb("m9", 0).error == ErrorCode.GROUP_ID_NOT_FOUND
    assert c.mgr.group("g") is not None and c.group() is None

    mixed = Cluster(consumer_migration_policy="upgrade")  # upgrades, never downgrades
    classic_group(mixed)
    mixed.hb("m9", 0)
    mixed.hb("m9", -1, topics=None)
    assert mixed.group() is not None and mixed.mgr.group("g") is None
