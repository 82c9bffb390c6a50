"""The partitions one node leads in a cluster: `ClusterPartitions`, the `PartitionStores` port
(kcoord/partition_log/port.py) that `TopicData` serves the data plane from, over PostgreSQL.

* `lead` takes a partition's lease (`PartitionLeases.acquire`: only when free or expired, with a new
  epoch) and loads it (`load_partition`); offsets continue from the stored log end.
* `get` answers a partition only while this node's lease clock says it may (the self-fence: it stops
  answering from memory before another node can take over); otherwise None, which the handlers
  answer NOT_LEADER_OR_FOLLOWER (`TopicData.missing`).
* `renew` extends every lease in one statement; a lost one is dropped at once.
* `resign` hands a partition over: new appends are refused, those in flight settle, the lease is
  released so the next leader takes it at once (Kafka's controlled shutdown / reassignment).
* A log that failed (fenced, or a write whose outcome is unknown) is dropped; `reload` bumps this
  node's own epoch (fencing whatever may still be in flight) and loads the partition again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kcoord.cluster.doubt import read_stored
from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.node_writer import NodeWriter
from kcoord.cluster.partition_load import load_partition
from kcoord.cluster.partition_rows import PartitionMoved
from kcoord.cluster.partition_store import PartitionFenced, PgPartitionLog
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.port import PartitionStore, PartitionStores
from kcoord.storage.faults import FaultPolicy

__all__ = ["ClusterPartitions", "Key"]

log = logging.getLogger("kcoord.cluster.partitions")

Key = tuple[str, int]

# A deleted topic: its rows go, and its lease rows stay with a higher epoch (and no leader), so a
# leader still appending is fenced and a topic created again under the name starts at offset 0, with
# no replica assignment (Kafka removes the deleted topic's PartitionRecords with it).
# The lease rows are locked first, in key order as `kcoord_flush` locks them: a flush of another
# node's partition of the topic holds its lease row while it upserts producer rows this deletes.
_DELETE_TOPIC = (
    "SELECT 1 FROM kcoord_partition_lease WHERE topic = $1 ORDER BY partition FOR NO KEY UPDATE",
    "DELETE FROM kcoord_partition_batch WHERE topic = $1",
    "DELETE FROM kcoord_partition_producer WHERE topic = $1",
    "DELETE FROM kcoord_partition_aborted WHERE topic = $1",
    "DELETE FROM kcoord_partition_epoch WHERE topic = $1",
    # its share state too (ShareCoordinatorService.onTopicsDeleted): a topic created again under the
    # name starts fresh, not fenced by the old share partitions' state epochs
    "DELETE FROM kcoord_share_state WHERE topic = $1",
    "UPDATE kcoord_partition_lease SET leader = NULL, epoch = epoch + 1, expires_at = '-infinity', "
    "log_start_offset = 0, log_end_offset = 0, replicas = NULL WHERE topic = $1",
)


class ClusterPartitions:
    """The partitions this node leads. `config_of(topic)` gives a topic's configs (`TopicData.
    partition_config`); `root` is what DescribeLogDirs reports as the log directory."""

    def __init__(
        self,
        pool: Any,
        leases: PartitionLeases,
        root: Path,
        config_of: Callable[[str], PartitionConfig],
        now_ms: Callable[[], int],
        policy: FaultPolicy | None = None,
        writer: NodeWriter | None = None,
    ) -> None:
        self._pool = pool
        self._writer = NodeWriter(pool) if writer is None else writer  # the node's, shared with shards
        self.leases = leases
        self.root = root
        self.policy = policy or FaultPolicy()
        self._config_of = config_of
        self._now_ms = now_ms
        self._logs: dict[Key, PgPartitionLog] = {}
        self._unresolved: dict[Key, PgPartitionLog] = {}  # failed logs with a call of unknown outcome
        self._tasks: set[asyncio.Future[Any]] = set()
        self._closing = False
        self._reading: set[PgPartitionLog] = set()  # failed logs whose call's verdict is being read back
        self.failovers = 0
        """Partitions taken over from another leader or reloaded after a failure (for /metrics)."""

    # -- the PartitionStores port ----------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> PgPartitionLog | None:
        found = self._logs.get((topic, partition))
        if found is None or found.failure is not None or not self.leases.valid((topic, partition)):
            return None
        return found

    def ensure(self, topic: str, partition: int, config: PartitionConfig) -> PgPartitionLog | None:
        """Never creates: whether this node leads a partition is the placement's decision."""
        found = self.get(topic, partition)
        if found is not None:
            found.config = config
        return found

    def partitions(self) -> list[PgPartitionLog]:
        return [p for p in self._logs.values() if self.get(p.topic, p.partition) is p]

    async def delete_topic(self, topic: str) -> None:
        for key in [k for k in self._logs if k[0] == topic]:
            await self._logs.pop(key).close()
            self.leases.forget(key)
        async with self._pool.acquire() as conn, conn.transaction():
            for sql in _DELETE_TOPIC:
                await conn.execute(sql, topic)

    def enforce_retention(self) -> None:
        now = self._now_ms()
        for plog in self.partitions():
            plog.remove_expired_producers(now)
            start = plog.expired_start(now)
            if start is not None:
                self._background(plog.move_log_start(start))

    async def close(self) -> None:
        """Graceful stop: every partition handed over (released, so the next leader needs no TTL)."""
        self._closing = True  # a call still in doubt is answered unknown, not read back
        for key in list(self._logs):
            await self.resign(key)
        for key in list(self._unresolved):
            self._resolve(key, None, None)
        for stale in list(self._reading):  # its read ends at its next poll
            stale.resolve(None)
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def pending(self) -> bool:
        return any(plog.pending for plog in self._logs.values())

    async def flush(self) -> None:
        for plog in list(self._logs.values()):
            await plog.flush()

    async def discard(self) -> None:
        """Let what is in flight settle and stop leading (the leases run out; nothing is released)."""
        await self.flush()
        for key in list(self._logs):
            self._logs.pop(key).failure = PartitionFenced(f"{key[0]}-{key[1]}: discarded")
            self.leases.forget(key)

    def abandon(self) -> None:
        for plog in [*self._logs.values(), *self._unresolved.values(), *self._reading]:
            plog.abandon()  # a call in doubt, read back or not, is never answered after a crash
        self._logs.clear()
        self._unresolved.clear()

    # -- leadership --------------------------------------------------------------------------------------
    def leads(self, key: Key) -> bool:
        return self.get(*key) is not None

    def held(self) -> dict[Key, int]:
        """(topic, partition) -> epoch of every lease held, loaded or not."""
        return self.leases.held()

    async def lead(self, key: Key) -> PgPartitionLog | None:
        """Take the partition if it is free or expired, and load it; None if another node holds it."""
        epoch = await self.leases.acquire(key)
        if epoch is None:
            self._resolve(key, None, None)
            return None
        self.failovers += 1
        loaded = await self._load(key, epoch)
        self._resolve(key, epoch, loaded)
        return loaded

    async def reload(self, key: Key) -> PgPartitionLog | None:
        """A held partition without a usable log: fence our own earlier epoch, then load again."""
        stale = self._logs.pop(key, None)
        if stale is not None:
            await stale.close()
        epoch = await self.leases.refence(key)
        if epoch is None:
            self._resolve(key, None, None)
            return None
        self.failovers += 1
        loaded = await self._load(key, epoch)
        self._resolve(key, epoch, loaded)
        return loaded

    def _resolve(self, key: Key, epoch: int | None, loaded: PgPartitionLog | None) -> None:
        """The verdict on a failed log's call of unknown outcome (`PgPartitionLog.resolve`). Every
        acquire, refence or deletion adds one to the epoch, so `epoch` one above the failed log's means
        the lease was ours throughout and this node's bump fenced that call (it committed before, or
        never will): the stored log end just loaded tells which of its batches were written. Otherwise
        another node may have written since, and nobody knows."""
        stale = self._unresolved.pop(key, None)
        if stale is None:
            return
        known = loaded is not None and epoch == stale.epoch + 1
        if not known and not self._closing:  # read it back once another epoch fenced it (doubt.py)
            self._background(self._read_verdict(key, stale))
            return
        stored_end = loaded.log_end_offset if known and loaded is not None else None
        verdict = "unknown" if stored_end is None else f"stored up to {stored_end}"
        log.info("%s-%d: the call in doubt at epoch %d (from offset %d): %s", *key, stale.epoch,
                 stale.high_watermark, verdict)  # fmt: skip
        stale.resolve(stored_end)

    async def _read_verdict(self, key: Key, stale: PgPartitionLog) -> None:
        """The call's verdict from the table once another epoch fenced it, while its requests wait
        (until `PgPartitionLog.settle`'s RESOLVE_WITHIN_S bound answers them unknown)."""
        offsets = stale.unresolved_offsets()
        self._reading.add(stale)
        try:
            stored = await read_stored(self._pool, *key, stale.epoch, offsets, lambda: bool(stale.unresolved))
        finally:
            self._reading.discard(stale)
        if stored is None:
            return  # answered meanwhile (the bound ran out, or a crash dropped them)
        found = sum(1 for o in offsets if o in stored)
        log.info("%s-%d: the call in doubt at epoch %d (from offset %d), read back after another epoch: "
                 "%d of %d batches stored", *key, stale.epoch, stale.high_watermark, found,
                 len(offsets))  # fmt: skip
        stale.resolve_stored(stored)

    async def _load(self, key: Key, epoch: int) -> PgPartitionLog | None:
        try:
            loaded = await load_partition(
                self._pool, *key, epoch, self._config_of(key[0]), on_failed=self._failed, writer=self._writer
            )
        except PartitionMoved:
            self.leases.forget(key)
            return None
        self._logs[key] = loaded
        log.info("leading %s-%d at epoch %d from offset %d", *key, epoch, loaded.log_end_offset)
        return loaded

    async def resign(self, key: Key) -> None:
        plog = self._logs.pop(key, None)
        if plog is not None:
            await plog.close()
        await self.leases.release(key)
        log.info("handed %s-%d over", *key)

    async def renew(self) -> set[Key]:
        """Renew every lease; the partitions lost are dropped (their writers refuse from now on)."""
        lost = await self.leases.renew()
        for key in lost:
            self._resolve(key, None, None)
            plog = self._logs.pop(key, None)
            if plog is not None:
                log.warning("lost the lease of %s-%d (epoch %d): another node leads it", *key, plog.epoch)
                self._background(plog.close())
        return lost

    def _failed(self, plog: PgPartitionLog) -> None:
        key = (plog.topic, plog.partition)
        if self._logs.get(key) is plog:
            log.warning("partition %s-%d stopped at epoch %d: %s", *key, plog.epoch, plog.failure)
            del self._logs[key]  # the placement's next tick reloads it if the lease is still ours
        if plog.unresolved:  # also a log `reload` or `resign` took out, its call settling meanwhile
            self._resolve(key, None, None)  # an earlier one (its reload failed): unknown
            self._unresolved[key] = plog
            if not self.leases.valid(key):  # run out already (a call that timed out against a
                self._resolve(key, None, None)  # silent database): another node may take it first
            else:  # at the latest when the lease clock runs out (the database may stay away)
                ttl_s = self.leases.ttl_ms / 1000
                asyncio.get_running_loop().call_later(ttl_s, self._doubt_expired, key, plog)

    def _doubt_expired(self, key: Key, plog: PgPartitionLog) -> None:
        if self._unresolved.get(key) is plog:
            self._resolve(key, None, None)

    def _background(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


if TYPE_CHECKING:  # mypy proves both implement the port TopicData serves the data plane from

    def _stores(partitions: ClusterPartitions) -> PartitionStores:
        return partitions

    def _store(plog: PgPartitionLog) -> PartitionStore:
        return plog
