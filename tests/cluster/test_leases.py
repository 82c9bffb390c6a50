"""Shard leases on a real PostgreSQL, and the owner's self-fence rule (`LeaseClock`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.leases import LeaseClock, ShardLeases
from kcoord.cluster.schema import init_cluster


@pytest.fixture
async def pools(cluster_dsn: str) -> AsyncIterator[list[Any]]:
    """Three nodes' pools on an initialized cluster of 8 shards."""
    conn = await asyncpg.connect(cluster_dsn)
    await init_cluster(conn, 8)
    await conn.close()
    made = [await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4) for _ in range(3)]
    try:
        yield made
    finally:
        for pool in made:
            await pool.close()


async def wait_expired(pool: Any, shard: int) -> None:
    """Until PostgreSQL's now() is past the shard's expires_at (bounded: the TTLs here are tiny)."""
    deadline = time.monotonic() + 10
    while not await pool.fetchval(
        "SELECT expires_at < now() FROM kcoord_shard_lease WHERE shard = $1", shard
    ):
        assert time.monotonic() < deadline, "lease never expired"


# -- LeaseClock: pure ----------------------------------------------------------------------------------
def test_clock_is_invalid_before_the_first_renewal() -> None:
    clock = LeaseClock(ttl_ms=1000, margin_ms=100)
    assert not clock.valid(0.0) and clock.remaining_ms(0.0) == 0


def test_clock_runs_from_the_send_time_minus_the_margin() -> None:
    clock = LeaseClock(ttl_ms=1000, margin_ms=100)
    clock.renewed(sent_at=50.0)
    assert clock.valid(50.0) and clock.valid(50.899)
    assert not clock.valid(50.9) and not clock.valid(51.0)
    assert 399 <= clock.remaining_ms(50.5) <= 400  # floored: never more than is left


def test_a_late_answer_to_an_older_renewal_never_shortens_the_lease() -> None:
    clock = LeaseClock(ttl_ms=1000, margin_ms=100)
    clock.renewed(sent_at=10.0)
    clock.renewed(sent_at=9.0)
    assert clock.valid(10.85) and not clock.valid(10.9)


@pytest.mark.parametrize("margin_ms", [-1, 1000, 2000])
def test_clock_needs_a_margin_below_the_ttl(margin_ms: int) -> None:
    with pytest.raises(ValueError):
        LeaseClock(ttl_ms=1000, margin_ms=margin_ms)


# -- ShardLeases on PostgreSQL --------------------------------------------------------------------------
async def test_acquire_takes_a_free_shard_and_bumps_its_epoch(pools: list[Any]) -> None:
    a, b = ShardLeases(pools[0], 1, 60_000), ShardLeases(pools[1], 2, 60_000)
    assert await a.acquire(3) == 1
    assert a.held() == {3: 1} and a.valid(3)
    assert await b.acquire(3) is None  # held and unexpired
    row = await pools[2].fetchrow(
        "SELECT owner, epoch, expires_at > now() AS live FROM kcoord_shard_lease WHERE shard = 3"
    )
    assert (row["owner"], row["epoch"], row["live"]) == (1, 1, True)
    assert await a.acquire(3) is None  # not even by its owner: a second process with this node id must wait
    assert await a.acquire(99) is None  # no such shard


async def test_an_expired_lease_is_taken_over_and_the_old_owner_learns_it_is_lost(pools: list[Any]) -> None:
    a, b = ShardLeases(pools[0], 1, 50), ShardLeases(pools[1], 2, 60_000)
    assert await a.acquire(0) == 1 and await a.acquire(1) == 1
    await wait_expired(pools[2], 0)
    assert await b.acquire(0) == 2
    assert await a.renew() == {0}  # shard 1 was expired too but nobody took it: renewed, still ours
    assert a.held() == {1: 1} and not a.valid(0)
    assert await a.renew() == set()


async def test_renew_extends_every_held_lease(pools: list[Any]) -> None:
    a = ShardLeases(pools[0], 1, 60_000)
    for shard in (2, 4, 6):
        assert await a.acquire(shard) == 1
    before = await pools[2].fetch(
        "SELECT shard, expires_at FROM kcoord_shard_lease WHERE owner = 1 ORDER BY shard"
    )
    assert await a.renew() == set()
    after = await pools[2].fetch(
        "SELECT shard, expires_at FROM kcoord_shard_lease WHERE owner = 1 ORDER BY shard"
    )
    assert [r["shard"] for r in after] == [2, 4, 6]
    assert all(new["expires_at"] > old["expires_at"] for old, new in zip(before, after, strict=True))


async def test_renew_that_fails_renews_nothing_and_the_clock_runs_out(pools: list[Any]) -> None:
    now = [100.0]
    a = ShardLeases(pools[0], 1, 1000, margin_ms=100, monotonic=lambda: now[0])
    assert await a.acquire(5) == 1
    await pools[0].close()
    with pytest.raises(asyncpg.InterfaceError):
        await a.renew()
    assert a.valid(5, now=100.89) and not a.valid(5, now=100.9)


async def test_release_frees_the_shard_for_an_immediate_takeover(pools: list[Any]) -> None:
    a, b = ShardLeases(pools[0], 1, 60_000), ShardLeases(pools[1], 2, 60_000)
    assert await a.acquire(7) == 1
    assert await a.release(7) is True
    assert a.held() == {} and not a.valid(7)
    assert await b.acquire(7) == 2
    assert await a.release(7) is False


async def test_only_one_of_concurrent_takers_wins(pools: list[Any]) -> None:
    nodes = [ShardLeases(pools[i % 3], 10 + i, 60_000) for i in range(6)]
    epochs = await asyncio.gather(*(n.acquire(4) for n in nodes))
    assert sorted(e for e in epochs if e is not None) == [1]
    owner = await pools[0].fetchval("SELECT owner FROM kcoord_shard_lease WHERE shard = 4")
    assert owner == 10 + epochs.index(1)


async def test_the_owner_fences_itself_before_a_taker_can_acquire(pools: list[Any]) -> None:
    """Self-fence: by the time a taker's acquire has succeeded, the old owner's clock said stop."""
    for _ in range(5):
        a, b = ShardLeases(pools[0], 1, 40, margin_ms=4), ShardLeases(pools[1], 2, 60_000)
        shard = 1
        await pools[2].execute(
            "UPDATE kcoord_shard_lease SET owner = NULL, expires_at = '-infinity' WHERE shard = 1"
        )
        assert await a.acquire(shard) is not None
        deadline = time.monotonic() + 10
        while (epoch := await b.acquire(shard)) is None:
            assert time.monotonic() < deadline
        assert epoch is not None
        assert not a.valid(shard)
        await b.release(shard)
