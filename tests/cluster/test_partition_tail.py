"""Bounded partition failover (issue 35 item 2): a new leader loads the bytes of a bounded tail of
the partition (not every batch), reads older batches from PostgreSQL when a Fetch reaches them (the
parked Fetch woken as by an append), answers a timestamp lookup that needs a batch not in memory
with a retriable storage error until it is, keeps a bounded cache, and rebuilds the leader epoch
history from its rows (migration 6), back-filled from batches stored before."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.migration_tail import BACKFILL
from kcoord.cluster.partition_load import load_partition
from kcoord.cluster.partition_store import PgPartitionLog
from kcoord.partition_log import PartitionConfig
from kcoord.storage.faults import StorageFault
from tests.cluster.test_partition_store import KEY, NOW, batch, lead, pool, produce, values

__all__ = ["pool"]  # the fixture, shared with test_partition_store

CONFIG = PartitionConfig()
BATCHES = 40
COUNT = 5  # records per batch


async def led_with_tail(pool: Any, node_id: int, tail_rows: int) -> PgPartitionLog:
    await pool.execute("UPDATE kcoord_partition_lease SET expires_at = '-infinity'")
    epoch = await PartitionLeases(pool, node_id, 60_000).acquire(KEY)
    assert epoch is not None
    return await load_partition(pool, *KEY, epoch, CONFIG, tail_rows=tail_rows)


async def filled(pool: Any) -> list[tuple[int, bytes]]:
    """BATCHES batches of COUNT records written by node 1; (offset, value) of every record."""
    _, first = await lead(pool, 1)
    for _ in range(BATCHES):
        await produce(first, batch(count=COUNT))
    read = first.read(0, 1 << 30)
    assert read is not None
    written = values(read.records)
    assert len(written) == BATCHES * COUNT
    return written


async def read_all(log: PgPartitionLog, max_bytes: int) -> list[tuple[int, bytes]]:
    """Every record from the log start, each read woken by the log's listener when it found
    nothing in memory (as a parked Fetch is); at most one wait per batch."""
    woken = asyncio.Event()
    log.add_listener(woken.set)
    out: list[tuple[int, bytes]] = []
    offset, waits = log.log_start_offset, 0
    try:
        while offset < log.high_watermark:
            woken.clear()
            read = log.read(offset, max_bytes)
            assert read is not None
            if not read.records:
                waits += 1
                assert waits <= BATCHES, "a read from PostgreSQL never arrived"
                await asyncio.wait_for(woken.wait(), 10)
                continue
            got = values(read.records)
            out.extend(got)
            offset = got[-1][0] + 1
    finally:
        log.remove_listener(woken.set)
    return out


async def test_a_new_leader_loads_a_bounded_tail_and_reads_older_batches_on_demand(pool: Any) -> None:
    written = await filled(pool)
    second = await led_with_tail(pool, 2, tail_rows=4)
    assert second.batches.loaded == 4 and second.batches.resident == 4  # not the 40 batches stored
    assert (second.log_start_offset, second.high_watermark) == (0, BATCHES * COUNT)
    assert second.size == sum(m.size for m in second.batches.metas) > 0
    newest = second.read((BATCHES - 1) * COUNT, 1 << 20)
    assert newest is not None and values(newest.records) == written[-COUNT:]  # the tail: no fetch
    assert second.batches.fetches == 0
    oldest = second.read(0, 1 << 20)
    assert oldest is not None and oldest.records == b"" and oldest.high_watermark == BATCHES * COUNT
    assert await read_all(second, 1 << 20) == written
    assert second.batches.fetches >= 1
    assert await produce(second, batch(count=2)) == BATCHES * COUNT  # offsets continue as before


async def test_the_cache_of_batch_bytes_is_bounded(pool: Any) -> None:
    written = await filled(pool)
    second = await led_with_tail(pool, 2, tail_rows=1)
    one = second.batches.metas[0].size
    second.batches.cache_bytes = 3 * one
    assert await read_all(second, one) == written  # a batch per read: each fetched in its turn
    assert second.batches.resident_bytes <= 3 * one and second.batches.resident <= 3


async def test_a_timestamp_lookup_of_a_batch_not_in_memory_is_retriable(pool: Any) -> None:
    await filled(pool)
    second = await led_with_tail(pool, 2, tail_rows=1)
    woken = asyncio.Event()
    second.add_listener(woken.set)
    with pytest.raises(StorageFault) as refused:
        second.offset_for_timestamp(NOW + 2)  # every batch's records carry NOW + 0..4
    assert not refused.value.fatal
    await asyncio.wait_for(woken.wait(), 10)
    assert second.offset_for_timestamp(NOW + 2) == (2, NOW + 2)
    assert second.max_timestamp() == (4, NOW + COUNT - 1)  # the first batch holding the maximum


async def test_epoch_rows_are_written_with_the_batches_and_back_filled(pool: Any) -> None:
    await filled(pool)
    second = await led_with_tail(pool, 2, tail_rows=1)
    await produce(second, batch())
    rows = "SELECT epoch, start_offset FROM kcoord_partition_epoch ORDER BY epoch"
    stored = [tuple(r) for r in await pool.fetch(rows)]
    assert stored == [(1, 0), (2, BATCHES * COUNT)]
    await pool.execute("DELETE FROM kcoord_partition_epoch")
    await pool.execute(BACKFILL)  # what migration 6 runs on batches stored before it
    assert [tuple(r) for r in await pool.fetch(rows)] == stored
    third = await led_with_tail(pool, 1, tail_rows=1)
    assert third.epoch_history() == [(1, 0), (2, BATCHES * COUNT), (3, BATCHES * COUNT + 1)]
