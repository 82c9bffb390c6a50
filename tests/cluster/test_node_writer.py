"""The node's one fenced call per flush (`NodeWriter`, `kcoord_flush`, migration 4) on a real
PostgreSQL: the writes of several shards and partitions go in one call; a shard or partition
another node took over (or whose stored log end moved) refuses only its own writes while the others
commit; a call PostgreSQL refuses or whose outcome is unknown fails every write in it and
acknowledges none; a node's renewals and flushes over the same lease rows never deadlock."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.cluster.leases import PartitionLeases, ShardLeases
from kcoord.cluster.migrations import OFFSET_MISMATCH_SQLSTATE
from kcoord.cluster.node_writer import CALL_BYTES, NodeWriter
from kcoord.cluster.partition_load import load_partition
from kcoord.cluster.partition_store import PartitionFenced, PartitionWriteFailed, PgPartitionLog
from kcoord.cluster.shard_log import LeaseLost, ShardLogFailed, ShardRecordLog
from kcoord.partition_log import PartitionConfig, ValidatedAppend
from tests.cluster.helpers import commit, group_in, init, rows

NUM_SHARDS = 8
NOW = time.time_ns() // 1_000_000
DEADLINE_S = 30.0


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    await init(cluster_dsn, NUM_SHARDS)
    made = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=6)
    try:
        yield made
    finally:
        await made.close()


def batch(count: int = 1, value_bytes: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, NOW + i, b"k", os.urandom(value_bytes) if value_bytes else b"v%d" % i, [])
    return bytes(builder.build())


class Node:
    """One node's leases and writer over `pool` (its shards' and partitions' logs share the writer)."""

    def __init__(self, pool: Any, node_id: int) -> None:
        self.pool = pool
        self.writer = NodeWriter(pool)
        self.shards = ShardLeases(pool, node_id, 60_000)
        self.partitions = PartitionLeases(pool, node_id, 60_000)

    async def shard(self, shard: int) -> ShardRecordLog:
        epoch = await self.shards.acquire(shard)
        assert epoch is not None
        return ShardRecordLog(self.pool, shard, epoch, writer=self.writer)

    async def partition(self, topic: str, partition: int) -> PgPartitionLog:
        epoch = await self.partitions.acquire((topic, partition))
        assert epoch is not None
        return await load_partition(self.pool, topic, partition, epoch, PartitionConfig(), writer=self.writer)


def produce(log: PgPartitionLog, count: int = 1, value_bytes: int = 0) -> asyncio.Future[Any]:
    checked = log.validate(batch(count, value_bytes), NOW)
    assert isinstance(checked, ValidatedAppend), checked
    return log.append(checked, NOW)


def appended(log: ShardRecordLog, group: str, offset: int) -> asyncio.Future[BaseException | None]:
    """Append one offset commit; the future is its on_done's argument."""
    done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    log.append([commit(group, 0, offset)], done.set_result)
    return done


async def expire_and_take(pool: Any, shard: int, node_id: int = 2) -> None:
    await pool.execute("UPDATE kcoord_shard_lease SET expires_at = '-infinity' WHERE shard = $1", shard)
    assert await ShardLeases(pool, node_id, 60_000).acquire(shard) is not None


async def expire_and_lead(pool: Any, key: tuple[str, int], node_id: int = 2) -> None:
    sql = "UPDATE kcoord_partition_lease SET expires_at = '-infinity' WHERE topic = $1 AND partition = $2"
    await pool.execute(sql, *key)
    assert await PartitionLeases(pool, node_id, 60_000).acquire(key) is not None


async def batches(pool: Any, topic: str, partition: int) -> list[int]:
    found = await pool.fetch(
        "SELECT base_offset FROM kcoord_partition_batch WHERE topic = $1 AND partition = $2 ORDER BY 1",
        topic,
        partition,
    )
    return [int(r[0]) for r in found]


async def test_a_fenced_shard_and_partition_among_live_ones_refuse_only_their_own_writes(pool: Any) -> None:
    node = Node(pool, 1)
    live_a, fenced, live_b = [await node.shard(s) for s in (1, 2, 3)]
    led, moved_away = await node.partition("t", 0), await node.partition("t", 1)
    await expire_and_take(pool, 2)
    await expire_and_lead(pool, ("t", 1))
    # made with no await between them: one call carries all five
    done = [appended(log, group_in(log.shard, NUM_SHARDS), 7) for log in (live_a, fenced, live_b)]
    produced, refused = produce(led, 2), produce(moved_away, 2)
    outcomes = await asyncio.wait_for(asyncio.gather(*done), DEADLINE_S)
    assert (await asyncio.wait_for(produced, DEADLINE_S)).base_offset == 0
    with pytest.raises(PartitionFenced):
        await asyncio.wait_for(refused, DEADLINE_S)
    assert node.writer.calls == 1 and node.writer.writes == 5
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], LeaseLost) and outcomes[1].epoch == 1
    assert [len(await rows(pool, s)) for s in (1, 2, 3)] == [1, 0, 1]
    assert await batches(pool, "t", 0) == [0] and await batches(pool, "t", 1) == []
    assert led.high_watermark == 2 and moved_away.high_watermark == 0
    # fail-stop for the refused ones only: the live logs go on writing
    assert isinstance(await appended(fenced, "x", 8), LeaseLost)
    assert await asyncio.wait_for(appended(live_a, group_in(1, NUM_SHARDS), 8), DEADLINE_S) is None
    assert (await asyncio.wait_for(produce(led), DEADLINE_S)).base_offset == 2


async def test_a_call_carries_at_most_call_bytes_and_the_rest_follows_in_order(pool: Any) -> None:
    node = Node(pool, 1)
    first, second = await node.partition("t", 0), await node.partition("t", 1)
    shard = await node.shard(5)
    # queued with no await between them: 2.5 calls' worth of 200 KiB batches on each partition
    count = (5 * CALL_BYTES // 2) // (200 << 10)
    produced = [produce(log, 1, 200 << 10) for log in (first, second) for _ in range(count)]
    done = appended(shard, group_in(5, NUM_SHARDS), 3)
    answers = await asyncio.wait_for(asyncio.gather(*produced), DEADLINE_S)
    assert await asyncio.wait_for(done, DEADLINE_S) is None
    # every batch acknowledged at its offset, in order, on each partition
    assert [a.base_offset for a in answers] == [*range(count), *range(count)]
    assert await batches(pool, "t", 0) == list(range(count)) == await batches(pool, "t", 1)
    # no call carried more than CALL_BYTES plus one batch: at least 2 * 2.5 calls' bytes went in 5 calls
    assert node.writer.calls >= 5 and first.calls >= 3 and second.calls >= 3
    stored = await pool.fetchval("SELECT max(octet_length(batch)) FROM kcoord_partition_batch")
    assert node.writer.calls >= (2 * count * stored) // (CALL_BYTES + stored)
    ends = await pool.fetch("SELECT log_end_offset FROM kcoord_partition_lease WHERE topic = 't' ORDER BY 1")
    assert [int(r[0]) for r in ends] == [count, count]  # the fence's stored end followed every call


async def test_a_partition_whose_stored_end_moved_fails_alone(pool: Any) -> None:
    node = Node(pool, 1)
    live = await node.shard(4)
    partition = await node.partition("t", 0)
    # the table no longer ends where the leader's memory does (an earlier outcome was unknown)
    await pool.execute("UPDATE kcoord_partition_lease SET log_end_offset = 5 WHERE topic = 't'")
    done, produced = appended(live, group_in(4, NUM_SHARDS), 1), produce(partition)
    assert await asyncio.wait_for(done, DEADLINE_S) is None
    with pytest.raises(PartitionWriteFailed) as failed:
        await asyncio.wait_for(produced, DEADLINE_S)
    assert failed.value.sqlstate == OFFSET_MISMATCH_SQLSTATE
    assert node.writer.calls == 1 and len(await rows(pool, 4)) == 1 and await batches(pool, "t", 0) == []


async def test_a_call_postgresql_refuses_fails_every_write_in_it_and_acknowledges_none(pool: Any) -> None:
    node = Node(pool, 1)
    shard_a, shard_b = await node.shard(5), await node.shard(6)
    partition = await node.partition("t", 0)
    # a stale batch row where the next batch goes: the call's insert violates the primary key
    await pool.execute(
        "INSERT INTO kcoord_partition_batch VALUES ('t', 0, 0, 0, 0, -1, -1, -1, '\\x00'::bytea)"
    )
    done = [appended(shard_a, group_in(5, NUM_SHARDS), 1), appended(shard_b, group_in(6, NUM_SHARDS), 1)]
    produced = produce(partition)
    outcomes = await asyncio.wait_for(asyncio.gather(*done), DEADLINE_S)
    with pytest.raises(PartitionWriteFailed) as failed:
        await asyncio.wait_for(produced, DEADLINE_S)
    assert failed.value.sqlstate == "23505"  # unique_violation: the whole call rolled back
    assert all(isinstance(o, ShardLogFailed) and not isinstance(o, LeaseLost) for o in outcomes), outcomes
    assert node.writer.calls == 0
    assert await rows(pool, 5) == [] and await rows(pool, 6) == []
    assert await pool.fetchval("SELECT log_end_offset FROM kcoord_partition_lease WHERE topic = 't'") == 0
    assert partition.high_watermark == 0
    # fail-stop: every log of the call refuses what comes after (the node reloads them)
    assert isinstance(await appended(shard_a, "x", 2), ShardLogFailed)
    with pytest.raises(PartitionWriteFailed):
        await produce(partition)


async def test_a_call_whose_session_is_terminated_acknowledges_nothing(pool: Any) -> None:
    node = Node(pool, 1)
    shard_log = await node.shard(7)
    partition = await node.partition("t", 0)
    blocker = await pool.acquire()
    tx = blocker.transaction()
    await tx.start()
    try:
        await blocker.execute("SELECT 1 FROM kcoord_shard_lease WHERE shard = 7 FOR UPDATE")
        done, produced = appended(shard_log, group_in(7, NUM_SHARDS), 1), produce(partition)
        waiting = (
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%kcoord_flush%'"
        )
        pid = None
        for _ in range(1000):  # until the call waits in PostgreSQL for the held lease row
            if (pid := await pool.fetchval(waiting)) is not None:
                break
        assert pid is not None, "the call never reached the lease row"
        assert await pool.fetchval("SELECT pg_terminate_backend($1)", pid)
        outcome = await asyncio.wait_for(done, DEADLINE_S)
        with pytest.raises(PartitionWriteFailed):
            await asyncio.wait_for(produced, DEADLINE_S)
    finally:
        await tx.rollback()
        await pool.release(blocker)
    assert isinstance(outcome, ShardLogFailed) and not isinstance(outcome, LeaseLost), outcome
    assert await rows(pool, 7) == [] and await batches(pool, "t", 0) == []


MANY_SHARDS = 64


async def test_renewals_and_flushes_over_the_same_rows_never_deadlock(cluster_dsn: str) -> None:
    """The node renews every shard it holds while its flushes lock the same rows: both lock in
    shard order, so neither fails with PostgreSQL's deadlock error (40P01). The shards are held in
    descending order, the order a renewal driven by its argument arrays would lock them in."""
    await init(cluster_dsn, MANY_SHARDS)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=2, max_size=6)
    try:
        node = Node(pool, 1)
        logs = [await node.shard(s) for s in reversed(range(MANY_SHARDS))]
        groups = {log.shard: group_in(log.shard, MANY_SHARDS) for log in logs}

        async def renew() -> None:
            for _ in range(100):
                assert await node.shards.renew() == set()

        async def write() -> None:
            for offset in range(100):
                done = [appended(log, groups[log.shard], offset) for log in logs]
                assert await asyncio.gather(*done) == [None] * len(logs)

        await asyncio.wait_for(asyncio.gather(renew(), renew(), write()), 120)
        assert node.writer.calls == 100
    finally:
        await pool.close()
