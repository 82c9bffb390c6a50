"""`ShardRecordLog` and `load_shard` on a real PostgreSQL: the local log's bytes, the fence, group
commit, fail-stop, and a group coordinator running on it and replayed from it."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.migrations import FENCED_SQLSTATE
from kcoord.cluster.shard_log import (
    LSN_EPOCH_SHIFT,
    LeaseLost,
    ShardLogFailed,
    ShardRecordLog,
    load_shard,
    shard_key,
)
from kcoord.coordinator.groups import GroupManager, GroupState
from kcoord.coordinator.groups.consumer.records import ConsumerGroupEpoch
from kcoord.coordinator.groups.records import (
    GroupMetadataRecord,
    GroupTombstone,
    OffsetTombstone,
    TxnOffsetCommitRecord,
)
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry
from kcoord.coordinator.metadata.producer_ids import ProducerIdBlock, ProducerIds
from kcoord.coordinator.persistence import Replayer, from_storage, to_storage
from kcoord.coordinator.transactions import TransactionRecord
from tests.cluster.helpers import commit, group_in, init, rows
from tests.unit.conftest import Harness

NUM_SHARDS = 8


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    await init(cluster_dsn, NUM_SHARDS)
    made = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        yield made
    finally:
        await made.close()


class Outcomes:
    """on_done callbacks that record (index, error) in the order they run."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, BaseException | None]] = []

    def __call__(self, index: int) -> Any:
        return lambda error: self.seen.append((index, error))


async def take_over(pool: Any, shard: int, node_id: int = 2) -> int:
    """Another node takes `shard` (its lease made expired first): the new epoch."""
    await pool.execute("UPDATE kcoord_shard_lease SET expires_at = '-infinity' WHERE shard = $1", shard)
    epoch = await ShardLeases(pool, node_id, 60_000).acquire(shard)
    assert epoch is not None
    return epoch


# -- the fence in SQL ------------------------------------------------------------------------------------
async def test_an_append_with_a_stale_epoch_is_refused_and_changes_nothing(pool: Any) -> None:
    epoch = await ShardLeases(pool, 1, 60_000).acquire(2)
    assert epoch == 1
    sql = "SELECT kcoord_append($1, $2, $3::smallint[], $4::bytea[], $5::bytea[], $6::bigint[])"
    assert await pool.fetchval(sql, 2, 1, [0, 0], [b"k1", b"k2"], [b"v1", b"v2"], [11, 12]) == 12
    await take_over(pool, 2)
    before = await rows(pool, 2)
    with pytest.raises(asyncpg.PostgresError) as refused:
        await pool.fetchval(sql, 2, 1, [0, 0], [b"k1", b"k3"], [None, b"v3"], [13, 14])
    assert refused.value.sqlstate == FENCED_SQLSTATE == "KC001"
    assert await rows(pool, 2) == before == [(0, b"k1", b"v1", 11), (0, b"k2", b"v2", 12)]
    assert await pool.fetchval("SELECT last_lsn FROM kcoord_shard_lease WHERE shard = 2") == 12
    assert await pool.fetchval(sql, 2, 2, [0], [b"k1"], [None], [2 << 40]) == 2 << 40  # the new owner's


async def test_within_one_batch_the_newest_entry_of_a_key_wins(pool: Any) -> None:
    sql = "SELECT kcoord_append($1, 1, $2::smallint[], $3::bytea[], $4::bytea[], $5::bigint[])"
    assert await ShardLeases(pool, 1, 60_000).acquire(0) == 1
    await pool.fetchval(
        sql, 0, [0, 0, 0, 0], [b"a", b"a", b"b", b"b"], [b"1", None, None, b"2"], [1, 2, 3, 4]
    )
    assert await rows(pool, 0) == [(0, b"b", b"2", 4)]


async def test_an_append_commits_synchronously_even_where_the_session_says_off(pool: Any) -> None:
    assert await ShardLeases(pool, 1, 60_000).acquire(0) == 1
    sql = "SELECT kcoord_append(0, 1, $1::smallint[], $2::bytea[], $3::bytea[], $4::bigint[])"
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = off")
        await conn.fetchval(sql, [0], [b"k"], [b"v"], [1])
        assert await conn.fetchval("SHOW synchronous_commit") == "on"  # for this transaction's commit
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = remote_apply")
        await conn.fetchval(sql, [0], [b"k"], [b"w"], [2])
        assert await conn.fetchval("SHOW synchronous_commit") == "remote_apply"  # never weakened


# -- ShardRecordLog ---------------------------------------------------------------------------------------
async def test_records_are_stored_as_the_local_log_stores_them(pool: Any) -> None:
    group = group_in(3, NUM_SHARDS)
    log = ShardRecordLog(pool, 3, await ShardLeases(pool, 1, 60_000).acquire(3) or 0)
    records = [
        commit(group, 0, 42),
        commit(group, 1, 7),
        GroupMetadataRecord(group, "consumer", 1, "range", "m1", 1_700_000_000_000, ()),
        ConsumerGroupEpoch(group, 5, 0),
    ]
    outcomes = Outcomes()
    log.append(records, outcomes(0))
    log.append([OffsetTombstone(group, "t", 1)], outcomes(1))
    await log.flush()
    assert outcomes.seen == [(0, None), (1, None)]
    stored = await rows(pool, 3)
    expected = [to_storage(r) for r in (records[0], records[2], records[3])]
    assert [(t, k, v) for t, k, v, _ in stored] == [(r.type, r.key, r.value) for r in expected]
    assert [lsn for *_, lsn in stored] == [1 << LSN_EPOCH_SHIFT | n for n in (1, 3, 4)]
    assert await load_shard(pool, 3) == expected
    assert await pool.fetchval("SELECT last_lsn FROM kcoord_shard_lease WHERE shard = 3") == log.last_lsn


async def test_group_commit_puts_appends_made_during_a_call_into_the_next_one(pool: Any) -> None:
    log = ShardRecordLog(pool, 1, await ShardLeases(pool, 1, 60_000).acquire(1) or 0)
    group = group_in(1, NUM_SHARDS)
    outcomes = Outcomes()
    blocker = await pool.acquire()
    tx = blocker.transaction()
    await tx.start()
    try:
        await blocker.execute("SELECT 1 FROM kcoord_shard_lease WHERE shard = 1 FOR UPDATE")  # the call waits
        log.append([commit(group, 0, 0)], outcomes(0))
        waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1"
        for _ in range(1000):  # until the first call is in PostgreSQL, waiting for the lease row
            if await pool.fetchval(waiting, "%kcoord_flush%") == 1:
                break
        else:
            raise AssertionError("the first call never reached the lease row")
        for i in range(1, 51):
            log.append([commit(group, i, i), commit(group, i, i + 1)], outcomes(i))
    finally:
        await tx.rollback()
        await pool.release(blocker)
    await log.flush()
    assert outcomes.seen == [(i, None) for i in range(51)]
    assert (log.batches, log.records) == (2, 101)
    offsets = {r.partition: r.offset for r in map(from_storage, await load_shard(pool, 1))}  # type: ignore[union-attr]
    assert offsets == {0: 0, **{i: i + 1 for i in range(1, 51)}}


async def test_after_a_takeover_the_old_owner_is_refused_and_stays_refused(pool: Any) -> None:
    group = group_in(4, NUM_SHARDS)
    log = ShardRecordLog(pool, 4, await ShardLeases(pool, 1, 60_000).acquire(4) or 0)
    outcomes = Outcomes()
    log.append([commit(group, 0, 1)], outcomes(0))
    await log.flush()
    await take_over(pool, 4)
    log.append([commit(group, 0, 2)], outcomes(1))
    log.append([commit(group, 0, 3)], outcomes(2))
    await log.flush()
    log.append([commit(group, 0, 4)], outcomes(3))
    await log.flush()
    assert [i for i, _ in outcomes.seen] == [0, 1, 2, 3]
    assert outcomes.seen[0][1] is None
    errors = [e for _, e in outcomes.seen[1:]]
    assert all(isinstance(e, LeaseLost) and e.epoch == 1 and e.shard == 4 for e in errors)
    assert isinstance(log.failure, LeaseLost)
    assert [from_storage(r).offset for r in await load_shard(pool, 4)] == [1]  # type: ignore[union-attr]


async def test_a_broken_connection_fails_the_log_for_good(cluster_dsn: str, pool: Any) -> None:
    other = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=1)
    log = ShardRecordLog(other, 5, await ShardLeases(pool, 1, 60_000).acquire(5) or 0)
    await other.close()
    outcomes = Outcomes()
    log.append([commit(group_in(5, NUM_SHARDS), 0, 1)], outcomes(0))
    await log.flush()
    log.append([], outcomes(1))
    await log.flush()
    assert [i for i, _ in outcomes.seen] == [0, 1]
    assert all(isinstance(e, ShardLogFailed) for _, e in outcomes.seen)
    assert await load_shard(pool, 5) == []


async def test_close_lets_made_appends_settle_and_refuses_later_ones(pool: Any) -> None:
    group = group_in(6, NUM_SHARDS)
    log = ShardRecordLog(pool, 6, await ShardLeases(pool, 1, 60_000).acquire(6) or 0)
    outcomes = Outcomes()
    log.append([commit(group, 0, 1)], outcomes(0))
    await log.close()
    log.append([commit(group, 0, 2)], outcomes(1))
    await log.flush()
    assert outcomes.seen[0] == (0, None) and isinstance(outcomes.seen[1][1], ShardLogFailed)
    assert len(await load_shard(pool, 6)) == 1


def test_shard_key_is_the_group_or_the_transactional_id() -> None:
    from kcoord.coordinator.transactions.records import TransactionValue
    from kcoord.coordinator.transactions.state import TransactionState

    value = TransactionValue(1, -1, -1, 0, 60_000, TransactionState.EMPTY, (), 0, 0, 0)
    assert shard_key(commit("g1", 0, 1)) == "g1"
    assert shard_key(OffsetTombstone("g2", "t", 0)) == "g2"
    assert shard_key(GroupTombstone("g3")) == "g3"
    assert shard_key(ConsumerGroupEpoch("g4", 1, 0)) == "g4"
    assert shard_key(TxnOffsetCommitRecord(7, 0, "g5", "t", 0, 1, -1, "", 0)) == "g5"
    assert shard_key(TransactionRecord("txn-1", value)) == "txn-1"
    assert shard_key(TopicRecord("t", uuid.uuid4(), 3)) is None
    assert shard_key(ProducerIdBlock(1000)) is None


# -- a group coordinator on a shard, replayed from it -------------------------------------------------------
async def answered(h: Harness, log: ShardRecordLog, *replies: Any) -> None:
    for _ in range(600):
        if all(r.done for r in replies):
            return
        await log.flush()
        h.advance(100)
    raise AssertionError("replies never answered")


async def test_a_group_runs_on_a_shard_and_replays_from_it(pool: Any) -> None:
    shard = 7
    group = group_in(shard, NUM_SHARDS)
    log = ShardRecordLog(pool, shard, await ShardLeases(pool, 1, 60_000).acquire(shard) or 0)
    live = Harness(loaded=False, group_initial_rebalance_delay_ms=0)
    ids = itertools.count(1)
    live.mgr = GroupManager(live.config, live.clock, live.timers, log, new_uuid=lambda: f"u{next(ids)}")
    live.mgr.on_loaded()
    m1, j1 = live.join_new(group=group, client_id="c1")
    m2, j2 = live.join_new(group=group, client_id="c2")
    await answered(live, log, j1, j2)
    leader, generation = j1["leader"], j1["generation_id"]
    syncs = [
        live.sync(m, generation, {m1: b"a1", m2: b"a2"} if m == leader else None, group=group)
        for m in (m1, m2)
    ]
    await answered(live, log, *syncs)
    committed = live.commit({("t", 0): 10, ("t", 1): 20}, member_id=m1, generation=generation, group=group)
    await answered(live, log, committed)
    assert committed["topics"][0]["partitions"][0]["error_code"] == 0
    assert live.state(group) is GroupState.STABLE

    fresh = Harness(loaded=False)
    replayer = Replayer(fresh.mgr, TopicRegistry(fresh.log), ProducerIds(fresh.log))  # type: ignore[arg-type]
    for record in await load_shard(pool, shard):
        replayer.apply(record)
    replayer.finish()
    fresh.mgr.on_loaded()
    assert fresh.state(group) is GroupState.STABLE and fresh.generation(group) == generation
    assert dict(fresh.mgr.committed_offsets(group)) == dict(live.mgr.committed_offsets(group))
    assert {m.member_id: m.assignment for m in fresh.mgr.group(group).members.values()} == {
        m1: b"a1",
        m2: b"a2",
    }
