"""Partition leadership over PostgreSQL: `ClusterPartitions` (lead, self-fence, renew, hand over,
reload after a failure), the placement rule (`decide`, pure), `PartitionPlacement` with three nodes
in one process (each its own pool and leases), `ClusterLeadership` (elect, reassign) and `TopicData`
answering NOT_LEADER_OR_FOLLOWER for a partition another node leads; and a bounded race: a leader
appending while another node takes over never loses an acknowledged batch nor hands out an offset
twice."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import ElectionType, Outcome, TopicPartition
from kcoord.cluster.leadership import ClusterLeadership
from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.partition_load import load_partition
from kcoord.cluster.partition_store import PartitionWriteFailed, PgPartitionLog
from kcoord.cluster.partitions import ClusterPartitions, Key
from kcoord.cluster.placement import (
    NO_LEADER,
    LeaseRow,
    PartitionPlacement,
    decide,
    preferred_leader,
    rendezvous,
)
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry
from kcoord.partition_log import NotLeader, PartitionConfig, ValidatedAppend
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import read_header
from tests.cluster.helpers import init

NOW = time.time_ns() // 1_000_000
TOPIC = "orders"
PARTITIONS = [(TOPIC, p) for p in range(6)]


def batch(value: bytes = b"v") -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    builder.append(0, NOW, b"k", value, [])
    return bytes(builder.build())


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Node:
    """One node's partition side: its pool, leases, partitions, placement and leadership."""

    def __init__(self, pool: Any, node_id: int, ttl_ms: int) -> None:
        self.pool = pool
        self.node_id = node_id
        leases = PartitionLeases(pool, node_id, ttl_ms)
        self.partitions = ClusterPartitions(pool, leases, Path("/tmp"), lambda _: PartitionConfig(), now_ms)
        self.placement = PartitionPlacement(pool, node_id, self.partitions, lambda: PARTITIONS, poll_ms=50)
        self.leadership = ClusterLeadership(pool, self.placement)

    async def register(self, ttl_ms: int = 60_000) -> None:
        await self.pool.execute(
            "INSERT INTO kcoord_node (node_id, host, port, expires_at) "
            "VALUES ($1, '127.0.0.1', 9092, now() + $2::integer * interval '1 millisecond') "
            "ON CONFLICT (node_id) DO UPDATE SET expires_at = excluded.expires_at",
            self.node_id,
            ttl_ms,
        )


@pytest.fixture
async def pools(cluster_dsn: str) -> AsyncIterator[list[Any]]:
    await init(cluster_dsn, 4)
    made = [await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4) for _ in range(3)]
    try:
        yield made
    finally:
        for pool in made:
            await pool.close()


async def produce(plog: Any, value: bytes = b"v") -> int:
    checked = plog.validate(batch(value), NOW)
    assert isinstance(checked, ValidatedAppend), checked
    return int((await plog.append(checked, NOW)).base_offset)


def base_offsets(plog: PgPartitionLog) -> list[int]:
    read = plog.read(plog.log_start_offset, 1 << 30)
    assert read is not None
    offsets, position = [], 0
    while position < len(read.records):
        header = read_header(read.records, position)
        offsets.append(header.base_offset)
        position += header.size
    return offsets


async def settle(nodes: list[Node], rounds: int = 4) -> None:
    """Placement rounds on every node, in turn (bounded)."""
    for _ in range(rounds):
        for node in nodes:
            await node.placement.tick()


# -- the rule, pure -------------------------------------------------------------------------------------
def test_rendezvous_moves_only_the_joining_nodes_share() -> None:
    keys = [("t", p) for p in range(300)]
    before = {k: rendezvous(k, [1, 2, 3]) for k in keys}
    after = {k: rendezvous(k, [1, 2, 3, 4]) for k in keys}
    moved = [k for k in keys if before[k] != after[k]]
    assert all(after[k] == 4 for k in moved)
    assert 40 <= len(moved) <= 110  # about a quarter
    assert {before[k] for k in keys} == {1, 2, 3}


def test_preferred_leader_is_the_first_live_assigned_replica() -> None:
    assert preferred_leader(("t", 0), [3, 1], [1, 2, 3]) == 3
    assert preferred_leader(("t", 0), [5, 1], [1, 2, 3]) == 1
    assert preferred_leader(("t", 0), [5], [1, 2]) == rendezvous(("t", 0), [1, 2])
    assert preferred_leader(("t", 0), [], []) is None


def test_decide_takes_preferred_free_partitions_at_once_and_others_after_one_poll() -> None:
    live = [1, 2]
    mine = next(k for k in (("t", p) for p in itertools.count()) if rendezvous(k, live) == 1)
    theirs = next(k for k in (("t", p) for p in itertools.count()) if rendezvous(k, live) == 2)
    rows = {mine: LeaseRow(None, 3, True), theirs: LeaseRow(2, 5, True)}  # both free (theirs expired)
    take, hand_over, seen = decide(1, [mine, theirs], rows, live, [], set())
    assert (take, hand_over, seen) == ([mine], [], {theirs})
    take, _, seen = decide(1, [mine, theirs], rows, live, [], seen)
    assert take == [mine, theirs] and seen == set()
    held_by_2 = {theirs: LeaseRow(2, 6, False)}
    assert decide(1, [theirs], held_by_2, live, [], {theirs}) == ([], [], set())


def test_decide_hands_over_what_another_live_node_prefers() -> None:
    live = [1, 2]
    theirs = next(k for k in (("t", p) for p in itertools.count()) if rendezvous(k, live) == 2)
    rows = {theirs: LeaseRow(1, 1, False)}
    assert decide(1, [theirs], rows, live, [theirs], set()) == ([], [theirs], set())
    assert decide(1, [theirs], rows, [2], [theirs], set()) == ([], [], set())  # not registered: keep it
    assigned = {theirs: LeaseRow(1, 1, False, (1,))}
    assert decide(1, [theirs], assigned, live, [theirs], set()) == ([], [], set())


# -- one node's partitions --------------------------------------------------------------------------------
async def test_a_node_leads_loads_and_hands_over(pools: list[Any]) -> None:
    a, b = Node(pools[0], 1, 60_000), Node(pools[1], 2, 60_000)
    key: Key = (TOPIC, 0)
    plog = await a.partitions.lead(key)
    assert plog is not None and a.partitions.get(*key) is plog
    assert await b.partitions.lead(key) is None  # held and unexpired
    assert [await produce(plog) for _ in range(3)] == [0, 1, 2]
    await a.partitions.resign(key)
    assert a.partitions.get(*key) is None
    with pytest.raises(NotLeader):
        await produce(plog)  # the handed-over log refuses
    taken = await b.partitions.lead(key)  # released: no TTL to wait for
    assert taken is not None and taken.epoch == 2 and await produce(taken) == 3


async def test_a_node_stops_answering_when_its_lease_clock_runs_out(pools: list[Any]) -> None:
    clock = [0.0]
    leases = PartitionLeases(pools[0], 1, 1_000, monotonic=lambda: clock[0])
    partitions = ClusterPartitions(pools[0], leases, Path("/tmp"), lambda _: PartitionConfig(), now_ms)
    assert await partitions.lead((TOPIC, 1)) is not None
    clock[0] = 0.85
    assert partitions.get(TOPIC, 1) is not None
    clock[0] = 0.95  # past ttl - margin (100 ms): another node may take over at 1.0
    assert partitions.get(TOPIC, 1) is None and partitions.partitions() == []
    assert await partitions.renew() == set()  # the row is still ours: renewed
    assert partitions.get(TOPIC, 1) is not None


async def test_a_lost_lease_is_dropped_at_the_next_renewal(pools: list[Any]) -> None:
    a, b = Node(pools[0], 1, 60_000), Node(pools[1], 2, 60_000)
    key: Key = (TOPIC, 2)
    plog = await a.partitions.lead(key)
    assert plog is not None
    await pools[2].execute("UPDATE kcoord_partition_lease SET expires_at = '-infinity'")
    assert await b.partitions.lead(key) is not None
    assert await a.partitions.renew() == {key}
    assert a.partitions.get(*key) is None and a.partitions.held() == {}


async def test_a_failed_log_is_reloaded_at_a_new_epoch(pools: list[Any]) -> None:
    a = Node(pools[0], 1, 60_000)
    key: Key = (TOPIC, 3)
    plog = await a.partitions.lead(key)
    assert plog is not None and await produce(plog) == 0
    # Another writer at the same epoch (a twin of this node's memory) moves the stored end on.
    twin = await load_partition(pools[1], *key, plog.epoch, PartitionConfig())
    assert await produce(twin) == 1
    with pytest.raises(PartitionWriteFailed):  # the stored end moved: memory no longer matches
        await produce(plog)
    assert a.partitions.get(*key) is None  # fail-stop: not served
    await a.placement.tick()  # the placement reloads what it holds without a log
    again = a.partitions.get(*key)
    assert again is not None and again.epoch == plog.epoch + 1 and await produce(again) == 2
    with pytest.raises(NotLeader):
        await produce(twin)  # the re-fence shut the twin out


# -- several nodes ---------------------------------------------------------------------------------------
async def test_three_nodes_spread_the_partitions_and_take_over_a_dead_ones(pools: list[Any]) -> None:
    # A lease of 2 s: at 800 ms a loaded machine let leases run out between the settle and the check.
    nodes = [Node(pool, i + 1, 2000) for i, pool in enumerate(pools)]
    for node in nodes:
        await node.register()
    await settle(nodes)
    leaders = {key: nodes[0].placement.leader(*key) for key in PARTITIONS}
    assert all(leaders[key] == rendezvous(key, [1, 2, 3]) for key in PARTITIONS), leaders
    for node in nodes:
        for key in PARTITIONS:
            assert (node.partitions.get(*key) is not None) == (leaders[key] == node.node_id)
    victim = nodes[0]
    owned = [key for key in PARTITIONS if leaders[key] == 1]
    assert owned, "node 1 leads nothing: pick another partition count"
    offsets = {key: await produce(victim.partitions.get(*key)) for key in owned}
    await victim.pool.execute(
        "UPDATE kcoord_node SET expires_at = now() - interval '1 second' WHERE node_id = 1"
    )
    deadline = time.monotonic() + 10  # node 1 is gone (no renewals): its leases expire after 2 s
    while any(nodes[1].placement.leader(*key) in (1, NO_LEADER) for key in owned):
        assert time.monotonic() < deadline, "node 1's partitions were never taken over"
        await settle(nodes[1:], rounds=1)
        await asyncio.sleep(0.05)
    for key in owned:
        leader = nodes[1].placement.leader(*key)
        plog = nodes[leader - 1].partitions.get(*key)
        assert plog is not None and await produce(plog) == offsets[key] + 1  # offsets continue
    assert victim.partitions.get(*owned[0]) is None  # its own clock ran out too


async def test_elect_and_reassign_move_a_partition(pools: list[Any]) -> None:
    nodes = [Node(pool, i + 1, 60_000) for i, pool in enumerate(pools)]
    for node in nodes:
        await node.register()
    await settle(nodes)
    key = (TOPIC, 4)
    tp = TopicPartition(*key)
    first = nodes[0].placement.leader(*key)
    outcomes: list[dict[TopicPartition, Outcome]] = []
    done = asyncio.Event()

    def answered(result: dict[TopicPartition, Outcome]) -> None:
        outcomes.append(result)
        done.set()

    async def call(start: Any) -> dict[TopicPartition, Outcome]:
        done.clear()
        start()
        await asyncio.wait_for(done.wait(), 10)
        return outcomes[-1]

    elected = await call(lambda: nodes[0].leadership.elect(ElectionType.PREFERRED, [tp], answered))
    assert elected[tp].error is ErrorCode.ELECTION_NOT_NEEDED
    target = next(n for n in (1, 2, 3) if n != first)
    moved = await call(lambda: nodes[0].leadership.reassign({tp: [target]}, answered))
    assert moved[tp].error is ErrorCode.NONE
    await settle(nodes)
    assert all(node.placement.leader(*key) == target for node in nodes)
    assert nodes[target - 1].partitions.get(*key) is not None
    assert nodes[first - 1].partitions.get(*key) is None
    unknown = await call(lambda: nodes[0].leadership.reassign({tp: [9]}, answered))
    assert unknown[tp].error is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    cancelled = await call(lambda: nodes[0].leadership.reassign({tp: None}, answered))
    assert cancelled[tp].error is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert nodes[0].leadership.reassignments() == {}
    unclean = await call(lambda: nodes[0].leadership.elect(ElectionType.UNCLEAN, [tp], answered))
    assert unclean[tp].error is ErrorCode.ELECTION_NOT_NEEDED


async def test_topic_data_answers_not_leader_for_a_partition_led_elsewhere(pools: list[Any]) -> None:
    a = Node(pools[0], 1, 60_000)
    registry = TopicRegistry(None)  # type: ignore[arg-type]  # applied records only, nothing written
    registry.apply(TopicRecord(TOPIC, uuid.uuid4(), 2))
    data = TopicData(registry, a.partitions)
    assert await a.partitions.lead((TOPIC, 0)) is not None
    assert data.log(TOPIC, 0) is not None
    assert data.log(TOPIC, 1) is None and data.missing(TOPIC, 1) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert data.log(TOPIC, 2) is None and data.missing(TOPIC, 2) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert data.missing("nope", 0) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- the race ----------------------------------------------------------------------------------------------
async def test_appends_racing_a_takeover_lose_nothing_acknowledged_and_reuse_no_offset(
    pools: list[Any],
) -> None:
    """200 rounds: the leader appends concurrently while another node takes the partition over; the
    taker's load holds every acknowledged batch at its acknowledged offset and none refused."""
    outcomes = {"acked": 0, "refused": 0}
    for round_ in range(200):
        key = (f"race-{round_ % 20}", round_ // 20)
        old = PartitionLeases(pools[0], 1, 60_000)
        epoch = await old.acquire(key)
        assert epoch is not None
        leader = await load_partition(pools[0], *key, epoch, PartitionConfig())
        futures = []
        for i in range(8):
            checked = leader.validate(batch(b"%d-%d" % (round_, i)), NOW)
            assert isinstance(checked, ValidatedAppend)
            futures.append(leader.append(checked, NOW))
            if i == round_ % 8:
                await asyncio.sleep(0)
        await pools[1].execute(
            "UPDATE kcoord_partition_lease SET expires_at = '-infinity' WHERE topic = $1 AND partition = $2",
            *key,
        )
        taker = PartitionLeases(pools[1], 2, 60_000)
        new_epoch = await taker.acquire(key)
        assert new_epoch == epoch + 1
        loaded = await load_partition(pools[1], *key, new_epoch, PartitionConfig())
        results = await asyncio.gather(*futures, return_exceptions=True)
        acked = {r.base_offset for r in results if not isinstance(r, BaseException)}
        assert all(isinstance(r, NotLeader) for r in results if isinstance(r, BaseException))
        stored = base_offsets(loaded)
        assert stored == sorted(set(stored)) == list(range(len(stored)))  # no offset twice, no gap
        assert set(stored) == acked, (round_, stored, acked)
        assert loaded.log_end_offset == len(stored)
        outcomes["acked"] += len(acked)
        outcomes["refused"] += len(results) - len(acked)
    assert outcomes["acked"] > 0 and outcomes["refused"] > 0, outcomes  # both sides of the race were hit
