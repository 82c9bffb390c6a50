"""Partitions in PostgreSQL (migration 3): `PgPartitionLog` and `load_partition` on a real PostgreSQL,
with partition leader leases (`PartitionLeases`). Offsets continue across a leader change, a stale
leader's append is refused by the fence and changes nothing, idempotent producer state and open /
aborted transactions survive a move, an append is answered only once its call committed, and
concurrent appends share calls (group commit)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.migrations import OFFSET_MISMATCH_SQLSTATE
from kcoord.cluster.partition_load import load_partition
from kcoord.cluster.partition_rows import APPEND_SQL, PartitionMoved, append_args
from kcoord.cluster.partition_store import PartitionFenced, PartitionWriteFailed, PgPartitionLog
from kcoord.partition_log import (
    READ_COMMITTED,
    AppendError,
    DuplicateAppend,
    NotLeader,
    PartitionConfig,
    ValidatedAppend,
)
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import read_header
from tests.cluster.helpers import init

NOW = time.time_ns() // 1_000_000  # producers idle for a day are forgotten at load (expiry)
CONFIG = PartitionConfig()
KEY = ("t", 0)


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    await init(cluster_dsn, 4)
    made = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=6)
    try:
        yield made
    finally:
        await made.close()


def batch(
    producer: tuple[int, int, int] = (-1, -1, -1), count: int = 1, transactional: bool = False
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, *producer, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, NOW + i, b"k", b"v%d" % i, [])
    return bytes(builder.build())


def values(records: bytes) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in a read's bytes."""
    out: list[tuple[int, bytes]] = []
    position = 0
    while position < len(records):
        size = int.from_bytes(records[position + 8 : position + 12], "big") + 12
        for record in DefaultRecordBatch(records[position : position + size]):
            out.append((record.offset, bytes(record.value)))
        position += size
    return out


async def lead(pool: Any, node_id: int, key: tuple[str, int] = KEY) -> tuple[PartitionLeases, PgPartitionLog]:
    """Node `node_id` takes the partition (expiring the current lease first) and loads it."""
    await pool.execute(
        "UPDATE kcoord_partition_lease SET expires_at = '-infinity' WHERE topic = $1 AND partition = $2", *key
    )
    leases = PartitionLeases(pool, node_id, 60_000)
    epoch = await leases.acquire(key)
    assert epoch is not None
    return leases, await load_partition(pool, *key, epoch, CONFIG)


async def produce(log: PgPartitionLog, records: bytes) -> int:
    checked = log.validate(records, NOW)
    if isinstance(checked, DuplicateAppend):
        return checked.base_offset
    assert isinstance(checked, ValidatedAppend), checked
    return (await log.append(checked, NOW)).base_offset


async def test_offsets_continue_across_a_leader_change(pool: Any) -> None:
    _, first = await lead(pool, 1)
    assert first.epoch == 1 and first.high_watermark == 0
    assert [await produce(first, batch(count=3)) for _ in range(3)] == [0, 3, 6]
    _, second = await lead(pool, 2)
    assert second.epoch == 2
    assert (second.log_start_offset, second.high_watermark, second.log_end_offset) == (0, 9, 9)
    assert await produce(second, batch(count=2)) == 9
    read = second.read(0, 1 << 20)
    assert read is not None and read.high_watermark == 11
    assert [offset for offset, _ in values(read.records)] == list(range(11))
    assert read.records.startswith(first.read(0, 1 << 20).records)  # type: ignore[union-attr]
    stored = await pool.fetch("SELECT base_offset, last_offset FROM kcoord_partition_batch ORDER BY 1")
    assert [tuple(r) for r in stored] == [(0, 2), (3, 5), (6, 8), (9, 10)]


async def test_a_stale_leaders_append_is_refused_by_the_fence_and_changes_nothing(pool: Any) -> None:
    _, old = await lead(pool, 1)
    assert await produce(old, batch()) == 0
    _, new = await lead(pool, 2)
    checked = old.validate(batch(), NOW)
    assert isinstance(checked, ValidatedAppend)
    with pytest.raises(PartitionFenced) as refused:
        await old.append(checked, NOW)
    assert isinstance(refused.value, NotLeader)
    assert old.high_watermark == 1 and old.log_end_offset == 1  # nothing acknowledged, nothing kept
    later = old.append(checked, NOW)  # fail-stop: refused without another call
    with pytest.raises(PartitionFenced):
        await later
    assert await pool.fetchval("SELECT count(*) FROM kcoord_partition_batch") == 1
    assert await produce(new, batch()) == 1  # the new leader continues at the stored end
    assert await pool.fetchval("SELECT log_end_offset FROM kcoord_partition_lease") == 2


async def test_a_batch_not_at_the_stored_end_is_refused(pool: Any) -> None:
    leases, log = await lead(pool, 1)
    assert await produce(log, batch()) == 0
    twin = await load_partition(pool, *KEY, leases.epoch(KEY) or 0, CONFIG)  # same epoch, same memory
    assert await produce(twin, batch()) == 1
    checked = log.validate(batch(), NOW)  # `log` still believes the end is 1
    assert isinstance(checked, ValidatedAppend)
    with pytest.raises(PartitionWriteFailed) as refused:
        await log.append(checked, NOW)
    assert refused.value.sqlstate == OFFSET_MISMATCH_SQLSTATE == "KC002"
    assert [tuple(r) for r in await pool.fetch("SELECT base_offset FROM kcoord_partition_batch")] == [
        (0,),
        (1,),
    ]


async def test_idempotent_producer_state_survives_a_move(pool: Any) -> None:
    _, first = await lead(pool, 1)
    assert await produce(first, batch((7, 1, 0), count=2)) == 0
    assert await produce(first, batch((7, 1, 2), count=1)) == 2
    _, second = await lead(pool, 2)
    retry = second.validate(batch((7, 1, 2), count=1), NOW)
    assert retry == DuplicateAppend(2)  # one of the last five batches: answered with its offset
    gap = second.validate(batch((7, 1, 5)), NOW)
    assert isinstance(gap, AppendError) and gap.error_code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    fenced = second.validate(batch((7, 0, 3)), NOW)
    assert isinstance(fenced, AppendError) and fenced.error_code is ErrorCode.INVALID_PRODUCER_EPOCH
    assert await produce(second, batch((7, 1, 3))) == 3
    rows = second.producer_states()
    assert [(r.producer_id, r.producer_epoch, r.last_sequence) for r in rows] == [(7, 1, 3)]


async def test_transactions_and_the_aborted_index_survive_a_move(pool: Any) -> None:
    _, first = await lead(pool, 1)
    assert await produce(first, batch((1, 0, 0), transactional=True)) == 0
    assert await produce(first, batch((2, 0, 0), transactional=True)) == 1
    aborted = first.append_marker(1, 0, False, 0, NOW)
    assert not isinstance(aborted, AppendError)
    assert (await aborted).base_offset == 2
    assert first.last_stable_offset == 1  # producer 2's transaction is still open
    _, second = await lead(pool, 2)
    assert second.last_stable_offset == 1 and second.has_ongoing_transaction(2)
    committed = second.append_marker(2, 0, True, 0, NOW)
    assert not isinstance(committed, AppendError)
    assert (await committed).base_offset == 3
    assert second.last_stable_offset == 4
    read = second.read(0, 1 << 20, READ_COMMITTED)
    assert read is not None and read.aborted_transactions == [(1, 0)]
    _, third = await lead(pool, 3)
    read = third.read(0, 1 << 20, READ_COMMITTED)
    assert read is not None and read.aborted_transactions == [(1, 0)] and read.last_stable_offset == 4
    stale = third.append_marker(2, 0, True, -1, NOW)  # an older coordinator epoch than the last marker's
    assert isinstance(stale, AppendError) and stale.error_code is ErrorCode.TRANSACTION_COORDINATOR_FENCED


async def test_an_append_is_answered_only_after_its_call_committed(pool: Any) -> None:
    _, log = await lead(pool, 1)
    blocker = await pool.acquire()
    tx = blocker.transaction()
    await tx.start()
    await blocker.execute("SELECT 1 FROM kcoord_partition_lease WHERE topic = 't' FOR UPDATE")
    checked = log.validate(batch(), NOW)
    assert isinstance(checked, ValidatedAppend)
    future = log.append(checked, NOW)
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1"
    for _ in range(1000):
        if await pool.fetchval(waiting, "%kcoord_flush%") == 1:
            break
    else:
        raise AssertionError("the call never reached the lease row")
    later = [log.append(v, NOW) for v in (log.validate(batch(count=2), NOW) for _ in range(20))]  # type: ignore[arg-type]
    assert not future.done() and log.high_watermark == 0 and log.read(0, 1 << 20).records == b""  # type: ignore[union-attr]
    await tx.rollback()
    await pool.release(blocker)
    assert (await future).base_offset == 0
    assert [(await f).base_offset for f in later] == list(range(1, 41, 2))
    assert log.calls == 2  # group commit: the twenty appends made while the first waited, in one call
    assert log.high_watermark == 41


async def test_delete_records_is_fenced_and_survives_a_move(pool: Any) -> None:
    _, first = await lead(pool, 1)
    for _ in range(4):
        await produce(first, batch(count=2))
    assert await first.delete_records(5) == 5
    assert first.read(4, 1 << 20) is None and first.read(5, 1 << 20) is not None
    _, second = await lead(pool, 2)
    assert (second.log_start_offset, second.high_watermark) == (5, 8)
    assert [o for o, _ in values(second.read(5, 1 << 20).records)] == [4, 5, 6, 7]  # type: ignore[union-attr]
    with pytest.raises(PartitionFenced):
        await first.delete_records(7)


async def test_a_load_for_an_epoch_that_moved_on_is_refused(pool: Any) -> None:
    await lead(pool, 1)
    await lead(pool, 2)
    with pytest.raises(PartitionMoved):
        await load_partition(pool, *KEY, 1, CONFIG)


async def test_the_append_function_checks_the_epoch_in_sql(pool: Any) -> None:
    leases, log = await lead(pool, 1)
    await produce(log, batch())
    await lead(pool, 2)
    stale = log.read(0, 1 << 20)
    assert stale is not None
    from kcoord.cluster.partition_rows import StoredBatch

    row = (StoredBatch(1, 1, NOW, stale.records), -1, None, None)
    with pytest.raises(asyncpg.PostgresError) as refused:
        await pool.fetchval(APPEND_SQL, *append_args("t", 0, 1, [row]))
    assert refused.value.sqlstate == "KC001"
    assert await asyncio.wait_for(pool.fetchval("SELECT count(*) FROM kcoord_partition_batch"), 5) == 1
    assert leases.epoch(KEY) == 1


def batch_epochs(records: bytes) -> list[tuple[int, int]]:
    """(base offset, partitionLeaderEpoch) of every batch in a read's bytes."""
    out, position = [], 0
    while position < len(records):
        header = read_header(records, position)
        out.append((header.base_offset, header.partition_leader_epoch))
        position += header.size
    return out


async def test_batches_carry_the_lease_epoch_and_each_load_rebuilds_the_epoch_history(pool: Any) -> None:
    _, first = await lead(pool, 1)
    for _ in range(3):
        await produce(first, batch(count=3))
    assert (first.leader_epoch, first.epoch_history()) == (1, [(1, 0)])
    _, second = await lead(pool, 2)
    assert (second.leader_epoch, second.epoch_history()) == (2, [(1, 0), (2, 9)])
    assert await produce(second, batch(count=2)) == 9
    read = second.read(0, 1 << 20)
    assert read is not None and batch_epochs(read.records) == [(0, 1), (3, 1), (6, 1), (9, 2)]
    _, third = await lead(pool, 1)  # leads at epoch 3 and writes nothing
    assert third.epoch_history() == [(1, 0), (2, 9), (3, 11)]
    _, fourth = await lead(pool, 2)  # LeaderEpochFileCache.assign: epoch 3 wrote nothing, so it goes
    assert fourth.epoch_history() == [(1, 0), (2, 9), (4, 11)]
    assert await fourth.delete_records(5) == 5  # truncateFromStart: epoch 1 now starts at the log start
    assert fourth.epoch_history() == [(1, 5), (2, 9), (4, 11)]
    _, fifth = await lead(pool, 1)  # rebuilt from the batches it loads (the first of them starts at 3)
    assert fifth.epoch_history() == [(1, 5), (2, 9), (5, 11)]
