"""Shard ownership on one node: which shards it serves, loading and unloading them.

Each shard moves NOT_OWNED -> LOADING -> ACTIVE -> DRAINING -> NOT_OWNED (Kafka: the partition's
`CoordinatorRuntime` context, scheduleLoadOperation on election, scheduleUnloadOperation on
resignation). The phases are the coordinators' own (`coordinator.runtime.ShardPhases`, one table the
node's group and transaction coordinators answer from); ownership moves them. The edge answers
from `state(shard)`: LOADING is COORDINATOR_LOAD_IN_PROGRESS, NOT_OWNED and DRAINING are
NOT_COORDINATOR (`CoordinatorRuntime.withActiveContextOrThrow`).

* Placement: rendezvous hashing over the live nodes names each shard's preferred owner. A node
  acquires the free or expired shards it prefers; one nobody claimed by the next poll, any node
  takes (a preferred owner that died is not live any more, so this is only a safety net). An owner
  that is no longer preferred (a node joined) drains the shard and releases it.
* Loading: acquire the lease (the epoch bump), read the shard's records and replay them into the
  node's coordinators (`ShardHost.load`), then serve with a `ShardRecordLog` at that epoch.
* Unloading: stop serving (DRAINING), close the shard's log so that appends in flight settle,
  drop the shard's state from memory (`ShardHost.unload`), release the lease when it is still ours.
  A renewal that finds the lease gone, the self-fence clock running out or the fence refusing an
  append unload at once, without waiting for the next poll.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from kcoord import storage
from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.node_writer import NodeWriter
from kcoord.cluster.offsets_feed import OffsetsFeed, PartitionLoad
from kcoord.cluster.shard_log import LSN_EPOCH_SHIFT, ShardRecordLog, load_rows, row_record
from kcoord.coordinator.runtime.phases import Phase, ShardPhases

__all__ = ["Ownership", "ShardHost", "preferred_owner"]

log = logging.getLogger("kcoord.cluster")

CLOSE_TIMEOUT_S = 5.0
_PARALLEL_LOADS = 8
REPLAY_SLICE = 1_000
"""Records replayed between two yields to the event loop while a shard loads. A shard of 100,000
offsets takes about a second to replay here (several on a loaded machine); replayed in one go it
held the loop past the lease TTL, so no lease of the node was renewed meanwhile: the node fenced
itself off every shard it held, the new one included, as soon as the replay ended, and loaded it
again, forever (bench/shard_failover.py found it). A slice is a few tens of milliseconds. Kafka loads
on a thread of its own for the same reason (`CoordinatorLoaderImpl.doLoad`: the compacted partition
from its log start, `offsets.load.buffer.size` bytes at a time, given up once the partition is no
longer led); here the event loop is that thread's stand-in and a lost lease ends the load."""


_SERVING = (Phase.LOADING, Phase.ACTIVE)


class ShardHost(Protocol):
    """What loading and unloading a shard does to the node's coordinators: `replay(shard)` applies
    the shard's records one by one, `loaded(shard)` once they all were (session timers, markers of
    prepared transactions), `unload(shard)` drops the shard's state again."""

    def replay(self, shard: int) -> Callable[[storage.Record], None]: ...

    def loaded(self, shard: int) -> None: ...

    def unload(self, shard: int) -> None: ...


def _weight(shard: int, node_id: int) -> bytes:
    return hashlib.blake2b(f"{shard}/{node_id}".encode(), digest_size=8).digest()


def preferred_owner(shard: int, nodes: Iterable[int]) -> int | None:
    """Rendezvous (highest random weight) hashing: the node with the highest weight for the shard.
    A node joining takes about 1/n of the shards from the others; one leaving gives away only its own."""
    return max(nodes, key=lambda node: _weight(shard, node), default=None)


class Ownership:
    """The shards this node owns, with their logs, over `leases` (this node's `ShardLeases`);
    their phases in `phases`, the table the node's coordinators answer from."""

    def __init__(
        self,
        pool: Any,
        leases: ShardLeases,
        phases: ShardPhases,
        host: ShardHost,
        notify: Callable[[], Awaitable[None]],
        writer: NodeWriter | None = None,
    ) -> None:
        self._pool = pool
        self._writer = NodeWriter(pool) if writer is None else writer  # the node's, shared with partitions
        self.leases = leases
        self.phases = phases
        self.num_shards = phases.num_shards
        self._host = host
        self._notify = notify
        self._logs: dict[int, ShardRecordLog] = {}
        self._unclaimed: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.failovers = 0
        """Shards this node took over from an expired lease (not a released one)."""
        # `__consumer_offsets`: each owned shard is its partition of the same number (set with the
        # topic data, before any shard loads).
        self.offsets: OffsetsFeed | None = None

    @property
    def node_id(self) -> int:
        return self.leases.node_id

    # -- what the edge asks ----------------------------------------------------------------------
    def state(self, shard: int) -> Phase:
        """The shard's state now; an ACTIVE shard whose lease clock ran out is unloaded at once
        (the self-fence: no answer from memory once another node may have taken over)."""
        state = self.phases.of(shard)
        if state is Phase.ACTIVE and not self.leases.valid(shard):
            log.warning("shard %d: lease not renewed in time, unloading (self-fence)", shard)
            # DRAINING before the next answer: a request naming several groups is answered per group
            # by the coordinators from the phases, not from this call (kcoord/cluster/per_group.py).
            shard_log = self._drain(shard)
            self._spawn(self._finish_unload(shard, shard_log, release=False))
            return Phase.DRAINING
        return state

    def log(self, shard: int) -> ShardRecordLog | None:
        """The shard's log while it loads or serves; None otherwise (the write is refused)."""
        return self._logs.get(shard) if self.phases.of(shard) is not Phase.DRAINING else None

    def owned(self) -> dict[int, Phase]:
        """The shards this node loads, serves or drains (the metrics' `kcoord_cluster_shards`)."""
        return self.phases.held()

    def log_failed(self, shard: int, log_: ShardRecordLog) -> None:
        """An append of the shard failed (the fence refused it, or its outcome is unknown): memory
        may no longer match the table. Unload; the next poll loads the shard again if still ours."""
        if self._logs.get(shard) is log_ and self.phases.of(shard) is not Phase.DRAINING:
            log.warning("shard %d: %s; unloading", shard, log_.failure)
            self._spawn(self._unload(shard, release=True))

    # -- the node loop's steps -------------------------------------------------------------------
    async def renew(self) -> None:
        """Renew every held lease; unload the lost ones, and (renewed or not: the database may be
        away) every shard whose lease clock ran out, before another node can take it over."""
        try:
            lost = await self.leases.renew()
        finally:
            for shard, state in self.phases.held().items():
                if state is Phase.ACTIVE and not self.leases.valid(shard):
                    log.warning("shard %d: lease not renewed in time, unloading (self-fence)", shard)
                    await self._unload(shard, release=False)
        for shard in sorted(lost):
            if self.phases.of(shard) in _SERVING:  # not being released
                log.warning("shard %d: lease lost (another node took it over); unloading", shard)
                await self._unload(shard, release=False)

    async def reconcile(self, view: ClusterView) -> None:
        """Acquire the shards this node should own and release those it should not (one poll)."""
        nodes = set(view.nodes) | {self.node_id}
        take: list[int] = []
        give: list[int] = []
        unclaimed: set[int] = set()
        for shard in range(self.num_shards):
            preferred = preferred_owner(shard, nodes)
            state = self.phases.of(shard)
            if state is Phase.NOT_OWNED and view.owners.get(shard) is None:
                if preferred == self.node_id or shard in self._unclaimed:
                    take.append(shard)
                unclaimed.add(shard)
            elif state is Phase.ACTIVE and preferred != self.node_id and preferred in view.nodes:
                give.append(shard)
        self._unclaimed = unclaimed
        changed = await self._acquire_all(take)
        for shard in give:
            log.info("shard %d: another node is preferred now; draining and releasing", shard)
            await self._unload(shard, release=True)
        if changed or give:
            await self._notify()

    async def release_all(self) -> None:
        """Graceful shutdown: drain and release every shard (the next owners need not wait a TTL)."""
        for shard in sorted(self.phases.held()):
            await self._unload(shard, release=True)
        for task in list(self._tasks):
            await task

    # -- loading and unloading -------------------------------------------------------------------
    async def _acquire_all(self, shards: list[int]) -> int:
        if not shards:
            return 0
        gate = asyncio.Semaphore(_PARALLEL_LOADS)

        async def one(shard: int) -> bool:
            async with gate:
                return await self._load(shard)

        done = await asyncio.gather(*(one(s) for s in shards), return_exceptions=True)
        for shard, outcome in zip(shards, done, strict=True):
            if isinstance(outcome, BaseException):
                log.warning("shard %d: load failed: %r", shard, outcome)
        return sum(outcome is True for outcome in done)

    async def _load(self, shard: int) -> bool:
        started = time.monotonic()
        self.phases.set(shard, Phase.LOADING)  # before the acquire: nothing routes here meanwhile
        try:
            epoch = await self.leases.acquire(shard)
            if epoch is None:
                self.phases.set(shard, Phase.NOT_OWNED)
                return False
            if not self._loading(shard, None):
                # Unloaded while the acquire was in flight (a renewal reported an older epoch lost):
                # that unload had no lease to forget yet, so give this one back, or the node would
                # renew a lease for a shard it does not serve and no node would ever take it.
                await self._give_back(shard)
                return False
            rows = await load_rows(self._pool, shard)
        except BaseException:
            if self._loading(shard, None):
                self.phases.set(shard, Phase.NOT_OWNED)
                await self._give_back(shard)
            raise
        try:
            # positions from this epoch's on are above every earlier one
            offsets = None if self.offsets is None else PartitionLoad((epoch << LSN_EPOCH_SHIFT) + 1)
            if not await self._replay(shard, epoch, rows, offsets):
                log.info("shard %d: lost while loading at epoch %d; left to its unload", shard, epoch)
                return False
            self._serve(shard, epoch, offsets)
        except BaseException:  # a record this kcoord cannot replay: leave the shard to another node
            if self._loading(shard, epoch):  # else the shard's unload has cleaned up already
                self._logs.pop(shard, None)
                self._host.unload(shard)
                self.phases.set(shard, Phase.NOT_OWNED)
                await self._give_back(shard)
            raise
        self.phases.set(shard, Phase.ACTIVE)
        self.failovers += epoch > 1
        log.info(
            "shard %d: loaded at epoch %d (%d records, %.3fs)", shard, epoch, len(rows),
            time.monotonic() - started,
        )  # fmt: skip
        return True

    def _loading(self, shard: int, epoch: int | None) -> bool:
        """The shard is still loading here (at `epoch`, when given): no renewal found it lost and no
        self-fence unloaded it while the load awaited."""
        if self.phases.of(shard) is not Phase.LOADING:
            return False
        return epoch is None or self.leases.epoch(shard) == epoch

    async def _replay(self, shard: int, epoch: int, rows: list[Any], offsets: PartitionLoad | None) -> bool:
        """Replay the rows in slices, yielding between them so the node's renewals and requests run
        (REPLAY_SLICE); False, with nothing more applied, once the shard stopped loading at `epoch`
        (its unload dropped what the slices before had applied)."""
        apply = self._host.replay(shard)
        for start in range(0, len(rows), REPLAY_SLICE):
            if not self._loading(shard, epoch):
                return False
            for row in itertools.islice(rows, start, start + REPLAY_SLICE):
                record = row_record(row)
                apply(record)
                if offsets is not None:
                    offsets.add(row[3], record)
            await asyncio.sleep(0)
        return self._loading(shard, epoch)

    def _serve(self, shard: int, epoch: int, offsets: PartitionLoad | None) -> None:
        """The replayed shard gets its log at `epoch`, its loaded hooks and its `__consumer_offsets`
        partition, synchronously: nothing can unload it in between."""
        feed = self.offsets
        listener = None if feed is None else feed.listener(shard)
        self._logs[shard] = ShardRecordLog(self._pool, shard, epoch, listener, self._writer)
        self._host.loaded(shard)
        if feed is not None and offsets is not None:
            feed.install(shard, offsets)

    async def _give_back(self, shard: int) -> None:
        try:
            await self.leases.release(shard)
        except Exception as exc:  # the database is unreachable: the lease runs out on its own
            log.warning("shard %d: release failed: %r", shard, exc)

    async def _unload(self, shard: int, *, release: bool) -> None:
        if self.phases.of(shard) not in _SERVING:  # not ours, or already draining
            return
        await self._finish_unload(shard, self._drain(shard), release=release)

    def _drain(self, shard: int) -> ShardRecordLog | None:
        """Refuse the shard's requests from now on (DRAINING) and take its log out of service."""
        self.phases.set(shard, Phase.DRAINING)
        return self._logs.pop(shard, None)

    async def _finish_unload(self, shard: int, shard_log: ShardRecordLog | None, *, release: bool) -> None:
        """The appends in flight settle, the shard leaves memory, its lease is released or forgotten."""
        if shard_log is not None:
            try:
                await asyncio.wait_for(shard_log.close(), CLOSE_TIMEOUT_S)
            except TimeoutError:
                log.warning(
                    "shard %d: appends still in flight after %.0fs; unloading", shard, CLOSE_TIMEOUT_S
                )
        self._host.unload(shard)
        if self.offsets is not None:
            self.offsets.drop_partition(shard)
        if release:
            await self._give_back(shard)
        else:
            self.leases.forget(shard)
        self.phases.set(shard, Phase.NOT_OWNED)
        log.info("shard %d: unloaded%s", shard, " and released" if release else "")

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
