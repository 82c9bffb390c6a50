"""The fencing property, raced for real: an owner keeps appending while another node takes its shard
over. Every append acknowledged to the old owner is in the new owner's load, every refused one is
not, and nothing else is (cluster-notes.md, "Why it holds"). Bounded: ROUNDS rounds, one shard each."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest

from kcoord import storage
from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.shard_log import LeaseLost, ShardRecordLog, load_shard
from kcoord.coordinator.groups.records import OffsetCommitRecord
from kcoord.coordinator.persistence import from_storage, to_storage
from tests.cluster.helpers import commit, group_in, init

ROUNDS = 200
DEADLINE_S = 30.0


@pytest.fixture
async def nodes(cluster_dsn: str) -> AsyncIterator[tuple[Any, Any]]:
    """Two nodes' pools on a cluster with a shard per round."""
    await init(cluster_dsn, ROUNDS)
    a = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=4)
    b = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=4)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


@dataclass
class Round:
    outcomes: dict[int, BaseException | None] = field(default_factory=dict)
    """partition -> the old owner's answer for the append that wrote it."""
    values: dict[int, int] = field(default_factory=dict)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight_at_takeover: set[int] = field(default_factory=set)
    """Appended but not yet answered when the winning acquire was sent, or appended while it ran:
    these raced the takeover."""

    def acked(self) -> set[int]:
        return {p for p, e in self.outcomes.items() if e is None}

    def refused(self) -> set[int]:
        return {p for p, e in self.outcomes.items() if e is not None}

    def unanswered(self) -> set[int]:
        return set(self.values) - set(self.outcomes)


async def old_owner(log: ShardRecordLog, group: str, state: Round, rng: random.Random) -> None:
    """Append 1-3 offsets per append, with at most `window` unanswered (a client's load), until the
    database refuses one."""
    window = rng.randint(1, 64)
    partition = 0
    deadline = time.monotonic() + DEADLINE_S
    while not state.refused():
        assert time.monotonic() < deadline, "the old owner was never refused"
        if len(state.unanswered()) >= window:
            state.answered.clear()
            await asyncio.wait_for(state.answered.wait(), DEADLINE_S)
            continue
        parts = list(range(partition, partition + rng.randint(1, 3)))
        partition = parts[-1] + 1
        records = []
        for p in parts:
            state.values[p] = rng.randrange(1 << 40)
            records.append(commit(group, p, state.values[p]))

        def done(error: BaseException | None, parts: list[int] = parts) -> None:
            for p in parts:
                state.outcomes[p] = error
            state.answered.set()

        log.append(records, done)
        await asyncio.sleep(0)


async def taker(
    leases: ShardLeases, pool: Any, shard: int, state: Round, wait_for_acks: int
) -> tuple[int, list[storage.Record]]:
    """After `wait_for_acks` acknowledged offsets, take the shard as soon as the old lease expired and
    load it at once, as a new owner does, while the old owner may still be writing.

    The appends that raced the takeover are those unanswered when the winning acquire was sent and
    those made while it ran: their batches commit either before the epoch bump (acknowledged) or after
    it (refused), as the scheduler decides. Taking the snapshot only when the taker began counted a
    loaded machine's unlucky rounds, where every such append settled before the lease expired."""
    deadline = time.monotonic() + DEADLINE_S
    while len(state.acked()) < wait_for_acks:
        assert time.monotonic() < deadline
        await asyncio.sleep(0)
    while True:
        unanswered, made = state.unanswered(), set(state.values)
        if (epoch := await leases.acquire(shard)) is not None:
            break
        assert time.monotonic() < deadline, "the old owner's 1 ms lease never expired"
    state.in_flight_at_takeover = unanswered | (set(state.values) - made)
    return epoch, await load_shard(pool, shard)


async def test_acknowledged_appends_survive_a_takeover_and_refused_ones_never_appear(
    nodes: tuple[Any, Any],
) -> None:
    pool_a, pool_b = nodes
    raced_acked = raced_refused = 0  # appends in flight when the takeover began, by their fate
    for shard in range(ROUNDS):
        rng = random.Random(shard)
        group = group_in(shard, ROUNDS)
        state = Round()
        epoch_a = await ShardLeases(pool_a, 1, ttl_ms=1).acquire(shard)  # expires 1 ms later, never renewed
        assert epoch_a == 1
        log = ShardRecordLog(pool_a, shard, epoch_a)
        writer = asyncio.create_task(old_owner(log, group, state, rng))
        leases_b = ShardLeases(pool_b, 2, ttl_ms=60_000)
        epoch_b, records = await taker(leases_b, pool_b, shard, state, rng.randint(0, 200))
        await writer
        await log.flush()
        assert epoch_b == 2

        loaded = {}
        for record in records:
            domain = from_storage(record)
            assert isinstance(domain, OffsetCommitRecord) and domain.group_id == group
            loaded[domain.partition] = domain.offset
        assert set(state.outcomes) == set(state.values), "an append was never answered"
        assert all(e is None or isinstance(e, LeaseLost) for e in state.outcomes.values())
        assert state.refused(), "the old owner must end refused"
        assert set(loaded) == state.acked(), f"round {shard}: acknowledged and loaded differ"
        assert [from_storage(r) for r in await load_shard(pool_b, shard)] == [
            from_storage(r) for r in records
        ]
        assert not set(loaded) & state.refused()
        assert loaded == {p: state.values[p] for p in state.acked()}
        raced_acked += len(state.acked() & state.in_flight_at_takeover)
        raced_refused += len(state.refused() & state.in_flight_at_takeover)
    print(f"raced: {raced_acked} acknowledged, {raced_refused} refused")
    # Both fates of the race happened: the test exercised the fence, not just a quiet handover.
    assert raced_acked > 0 and raced_refused > 0, (raced_acked, raced_refused)


async def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not await condition():
        assert time.monotonic() < deadline, what


async def test_a_takeover_waits_for_an_append_that_passed_the_fence(nodes: tuple[Any, Any]) -> None:
    """The interleaving the race above can only hit by luck, made deterministic: the old owner's call
    has passed its epoch check and is held before its commit (a third session holds the key it
    writes). The takeover must wait for it, and then load what it wrote. A check that does not lock
    the lease row (a plain SELECT of the epoch, or INSERT ... WHERE EXISTS) lets the taker bump and
    load in between, and the old owner's acknowledged write is missing from the load."""
    pool_a, pool_b = nodes
    shard = 0
    group = group_in(shard, ROUNDS)
    record = commit(group, 0, 42)
    stored = to_storage(record)
    log = ShardRecordLog(pool_a, shard, await ShardLeases(pool_a, 1, ttl_ms=1).acquire(shard) or 0)
    blocker = await pool_b.acquire()
    tx = blocker.transaction()
    await tx.start()
    try:
        await blocker.execute(
            "INSERT INTO kcoord_record (shard, type, key, value, lsn) VALUES ($1, $2, $3, 'x', 0)",
            shard, stored.type, stored.key,
        )  # fmt: skip
        outcome: list[BaseException | None] = []
        log.append([record], outcome.append)
        take = await start_takeover_behind(pool_b, shard)
        assert not take.done(), "the takeover did not wait for the call that passed the fence"
    finally:
        await tx.rollback()  # the old owner's call goes on and commits
        await pool_b.release(blocker)
    assert await asyncio.wait_for(take, DEADLINE_S) == 2
    loaded = await load_shard(pool_b, shard)
    await log.flush()
    assert outcome == [None]
    assert loaded == [stored]


async def start_takeover_behind(pool: Any, shard: int) -> asyncio.Task[int | None]:
    """Once the old owner's call waits on the held key, start the takeover and return it once it
    either waits for a lock (as it must) or finished (the fence let it through)."""
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1"

    async def append_is_held() -> bool:
        return bool(await pool.fetchval(waiting, "%kcoord_flush%") == 1)

    await wait_until(append_is_held, "the old owner's call never reached the held key")
    take = asyncio.create_task(ShardLeases(pool, 2, ttl_ms=60_000).acquire(shard))

    async def takeover_waits_or_done() -> bool:
        return take.done() or bool(await pool.fetchval(waiting, "%kcoord_shard_lease%") == 1)

    await wait_until(takeover_waits_or_done, "the takeover neither waited nor finished")
    return take
