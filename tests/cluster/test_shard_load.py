"""How a new owner loads a shard (issue 35 item 2), on a real PostgreSQL: the load reads the shard's
live keys only, however often they were written (the table is the compacted log), and it replays in
slices that let the event loop run, so the node's renewals go on while a big shard loads, and a shard
lost in the middle of its load is left with nothing half applied."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from kcoord import storage
from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.offsets_feed import OffsetsFeed
from kcoord.cluster.ownership import REPLAY_SLICE, Ownership
from kcoord.cluster.shard_log import ShardRecordLog, load_rows, load_shard
from kcoord.coordinator.groups.records import GroupTombstone, OffsetTombstone
from kcoord.coordinator.persistence import to_storage
from kcoord.coordinator.runtime import Phase, ShardPhases
from tests.cluster.helpers import commit, group_in, init
from tests.offsets_decoder import read_batches

SHARDS = 2
SHARD = 1


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    await init(cluster_dsn, SHARDS)
    made = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        yield made
    finally:
        await made.close()


async def _write(pool: Any, records: list[Any], node_id: int = 9) -> None:
    """`records` appended by a node that held the shard before (its lease released after)."""
    leases = ShardLeases(pool, node_id, 60_000)
    epoch = await leases.acquire(SHARD)
    assert epoch is not None
    log = ShardRecordLog(pool, SHARD, epoch)
    errors: list[BaseException | None] = []
    for start in range(0, len(records), 500):
        log.append(records[start : start + 500], errors.append)
    await log.flush()
    assert set(errors) == {None}
    assert await leases.release(SHARD)


async def test_a_load_reads_one_row_per_live_key_however_often_keys_were_written(pool: Any) -> None:
    groups = [group_in(SHARD, SHARDS, prefix=f"load{i}") for i in range(3)]
    live = [commit(g, p, 0) for g in groups for p in range(400)]
    await _write(pool, live)
    for offset in range(1, 20):  # 19 more commits of every key: 24,000 records written in all
        await _write(pool, [commit(g, p, offset) for g in groups for p in range(400)])
    await _write(pool, [OffsetTombstone(groups[0], "t", p) for p in range(100)])  # 100 keys deleted
    await _write(pool, [GroupTombstone(groups[2])])  # a tombstone of a key never written: no row

    rows = await load_rows(pool, SHARD)
    assert len(rows) == 3 * 400 - 100, "one row per live key, not one per record written"
    newest = [commit(g, p, 19) for g in groups for p in range(400) if g != groups[0] or p >= 100]
    expected = {(r.type, r.key): r.value for r in map(to_storage, newest)}
    assert {(row[0], row[1]): row[2] for row in rows} == expected
    lsns = [row[3] for row in rows]
    assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)
    assert [(r.type, r.key, r.value) for r in await load_shard(pool, SHARD)] == [
        (row[0], row[1], row[2]) for row in rows
    ]


class _Host:
    """A `ShardHost` counting what it was given; `during(n)` runs after the n-th record applied."""

    def __init__(self, during: Callable[[int], None] = lambda n: None) -> None:
        self.applied: list[storage.Record] = []
        self.done: list[int] = []
        self.unloaded: list[int] = []
        self._during = during

    def replay(self, shard: int) -> Callable[[storage.Record], None]:
        def apply(record: storage.Record) -> None:
            self.applied.append(record)
            self._during(len(self.applied))

        return apply

    def loaded(self, shard: int) -> None:
        self.done.append(shard)

    def unload(self, shard: int) -> None:
        self.unloaded.append(shard)
        self.applied.clear()  # the node drops the shard's state


async def _nothing() -> None:
    return None


def _ownership(pool: Any, host: _Host) -> Ownership:
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    return Ownership(pool, ShardLeases(pool, 1, 60_000), phases, host, _nothing)


async def test_the_loop_runs_between_slices_of_a_big_load(pool: Any) -> None:
    group = group_in(SHARD, SHARDS)
    records = 5 * REPLAY_SLICE + 7
    await _write(pool, [commit(group, p, p) for p in range(records)])
    host = _Host()
    ownership = _ownership(pool, host)
    ownership.offsets = OffsetsFeed(SHARDS)
    between: list[int] = []  # records applied each time another task ran during the load

    async def other_task() -> None:
        for _ in range(100_000):  # bounded: a load that never ends fails the test, not the run
            if SHARD in host.done:
                return
            between.append(len(host.applied))
            await asyncio.sleep(0)

    ticker = asyncio.ensure_future(other_task())
    await ownership.reconcile(ClusterView())
    await ticker
    assert len(host.applied) == records and sorted(host.done) == [0, 1]
    slices = {n for n in between if 0 < n < records}
    assert slices >= {REPLAY_SLICE * k for k in range(1, 6)}, "the other task ran between every slice"
    assert ownership.state(SHARD) is Phase.ACTIVE
    feed = ownership.offsets
    assert not feed.built
    partition = feed.view.partition(SHARD)  # the first read builds the view from what the load gathered
    assert partition is not None and feed.built
    read = partition.read(0, 1 << 30)
    assert read is not None
    assert [r.offset for r in read_batches(read.records)] == [row[3] for row in await load_rows(pool, SHARD)]
    await ownership.release_all()


async def test_a_shard_lost_while_it_loads_is_left_with_nothing_applied(pool: Any) -> None:
    group = group_in(SHARD, SHARDS)
    await _write(pool, [commit(group, p, p) for p in range(3 * REPLAY_SLICE)])
    ownership: Ownership | None = None
    unloads: list[asyncio.Future[None]] = []

    def lose(applied: int) -> None:  # as a renewal finding the lease gone mid-load would
        if applied == REPLAY_SLICE + 10:
            assert ownership is not None
            unloads.append(asyncio.ensure_future(ownership._unload(SHARD, release=True)))

    host = _Host(lose)
    ownership = _ownership(pool, host)
    await ownership.reconcile(ClusterView())
    await asyncio.gather(*unloads)
    assert len(unloads) == 1
    assert host.unloaded.count(SHARD) == 1 and host.applied == []  # nothing applied after the unload
    assert host.done == [0], "the lost shard never ran its loaded hooks"
    assert ownership.state(SHARD) is Phase.NOT_OWNED and ownership.log(SHARD) is None
    owner = await pool.fetchval("SELECT owner FROM kcoord_shard_lease WHERE shard = $1", SHARD)
    assert owner is None, "released"


class _SlowAcquire(ShardLeases):
    """Leases whose acquire lets `meanwhile` run before the epoch is taken and stored: the window in
    which the chaos run's renewal unloaded a reloading shard."""

    def __init__(self, pool: Any, meanwhile: Callable[[], Any]) -> None:
        super().__init__(pool, 1, 60_000)
        self._meanwhile = meanwhile

    async def acquire(self, key: int) -> int | None:
        if key == SHARD:  # while the acquire is on its way to the database
            await self._meanwhile()
        return await super().acquire(key)


async def test_a_shard_unloaded_while_its_lease_is_acquired_gives_the_lease_back(pool: Any) -> None:
    """The chaos run at 611ff30: a renewal reported an older epoch of a shard lost while the node was
    acquiring it again; the unload found no lease to forget, the acquire then stored the new epoch, and
    the load stopped: a lease renewed for a shard nobody served. Now the load gives that lease back,
    and the next reconcile loads the shard."""
    await _write(pool, [commit(group_in(SHARD, SHARDS), 0, 1)])
    ownership: Ownership | None = None
    unloaded: list[bool] = []

    async def renewal_finds_it_lost() -> None:
        assert ownership is not None
        if not unloaded:  # the first acquire only
            unloaded.append(True)
            await ownership._unload(SHARD, release=False)

    host = _Host()
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    ownership = Ownership(pool, _SlowAcquire(pool, renewal_finds_it_lost), phases, host, _nothing)
    await ownership.reconcile(ClusterView())
    assert ownership.state(SHARD) is Phase.NOT_OWNED
    assert SHARD not in ownership.leases.held(), "no lease kept for a shard this node does not serve"
    owner = await pool.fetchval("SELECT owner FROM kcoord_shard_lease WHERE shard = $1", SHARD)
    assert owner is None, "given back, so any node can take it now"
    await ownership.reconcile(ClusterView())
    assert ownership.state(SHARD) is Phase.ACTIVE and SHARD in ownership.leases.held()
    await ownership.release_all()
