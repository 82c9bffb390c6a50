"""Share-partition state in cluster mode (issue 34 item 3): it follows the partition's leader.

* `ShareStateLog` is the share tenant's `RecordLog` (kcoord/coordinator/share_partitions/tenant.py) on a
  cluster node: each record goes to `kcoord_share_state` in one `kcoord_share_put` call per flush, fenced
  by the lease epoch of its partition's leader (kcoord/cluster/share_migration.py). A write for a
  partition this node no longer hosts, or whose lease moved on (the function names it `fenced`), fails
  with `NotHosted`, which the tenant answers NOT_LEADER_OR_FOLLOWER.
* `ShareHosting` keeps the tenant's hosted partitions equal to the partitions this node leads: a
  partition taken is loaded from its rows (one snapshot and one update per group, at most) before its
  share partitions are served; one lost (lease gone, log failed) is dropped at once, with its windows and
  lock timers; a write whose outcome is unknown (the call failed) drops the partition and loads it again
  from what PostgreSQL holds. Kafka: SharePartitionManager drops a partition's SharePartitions on a
  leadership change (`onLeadershipChange`) and the new leader's initialise from the share coordinator
  (`SharePartition.maybeInitialize`, ReadShareGroupState).

The group's coordinator resets or deletes the state of share partitions it does not host (the group
empty: AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups) with `kcoord_share_set`, which
notifies the leader; `ShareHosting.on_notify` then reloads the partition, and a leader write made from
the state before is refused by the state epoch (kcoord/cluster/share_migration.py) or, after a delete,
by the delete's marker: the leader sends with each record the delete generation it loaded
(kcoord/cluster/share_fence_migration.py).

Loads and calls take turns (`ShareStateLog.lock`), and a record is sent only while the hosting it was
made under is still current, so nothing built from an older copy of a partition's state ever
overwrites what a load read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from kcoord import storage
from kcoord.coordinator.persistence.share_state_codec import (
    share_record_from_storage,
    share_record_to_storage,
)
from kcoord.coordinator.runtime import OnDone
from kcoord.coordinator.share_partitions import (
    SharePartitions,
    ShareRecord,
    ShareSnapshot,
    ShareTombstone,
)
from kcoord.coordinator.share_partitions.durable import NotHosted

__all__ = ["Hosting", "ShareHosting", "ShareStateLog"]

log = logging.getLogger("kcoord.cluster.share")

Key = tuple[str, int]  # (topic, partition)
# topic id, key, value (None: delete), state epoch, the group's delete generation as loaded
Row = tuple[UUID, bytes, bytes | None, int, int]

_PUT = "SELECT fenced FROM kcoord_share_put($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
_SET = "SELECT kcoord_share_set($1, $2, $3, $4, $5, $6, $7)"
_GENERATIONS = "SELECT group_id, generation FROM kcoord_share_deleted WHERE topic = $1 AND partition = $2"
_LOAD = (
    "SELECT kind, key, value FROM kcoord_share_state WHERE topic = $1 AND partition = $2 AND topic_id = $3 "
    "ORDER BY group_id, kind"  # a snapshot (0x50) before its update (0x51)
)


@dataclass(eq=False, slots=True)
class Hosting:
    """One partition hosted here: its topic id, the lease epoch its state was loaded at; `failed` once
    a write's outcome is unknown (reloaded by the next reconcile)."""

    topic: str
    partition: int
    topic_id: UUID
    epoch: int
    failed: bool = False
    state_epochs: dict[str, int] = field(default_factory=dict)
    """group -> the state epoch of its share partition's newest snapshot (what its updates carry)."""
    generations: dict[str, int] = field(default_factory=dict)
    """group -> how many times its share partition's state was deleted when this load read it (what
    every record carries: a delete since fences them, kcoord/cluster/share_fence_migration.py)."""


@dataclass(slots=True)
class _Append:
    """One append: its records, each with the hosting it was made under (None: not hosted here)."""

    records: list[tuple[ShareRecord, Hosting | None]]
    on_done: OnDone
    fenced: bool = False
    error: BaseException | None = None


class ShareStateLog:
    """The share tenant's `RecordLog[ShareRecord]` on a cluster node. `name_of(topic_id)` names a topic."""

    def __init__(self, pool: Any, name_of: Callable[[UUID], str | None]) -> None:
        self._pool = pool
        self._name_of = name_of
        self.hosted: dict[Key, Hosting] = {}
        self.lock = asyncio.Lock()
        """Held by each call and each load: they take turns."""
        self._queue: list[_Append] = []
        self._task: asyncio.Future[None] | None = None
        self.calls = 0

    def append(self, records: Sequence[ShareRecord], on_done: OnDone) -> None:
        tagged = []
        for record in records:
            name = self._name_of(record.topic_id)
            hosting = None if name is None else self.hosted.get((name, record.partition))
            if hosting is not None and hosting.topic_id != record.topic_id:
                hosting = None
            tagged.append((record, hosting))
        self._queue.append(_Append(tagged, on_done))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._queue:
            appends, self._queue = self._queue, []
            async with self.lock:
                await self._call(appends)

    def _current(self, hosting: Hosting | None) -> bool:
        return hosting is not None and self.hosted.get((hosting.topic, hosting.partition)) is hosting

    async def _call(self, appends: list[_Append]) -> None:
        """One `kcoord_share_put` for every record still hosted, a `kcoord_share_set` for each reset or
        delete of a partition hosted elsewhere; each append answered after them."""
        partitions: dict[Hosting, int] = {}  # -> ord (1-based)
        rows: dict[tuple[int, str, int], Row] = {}
        elsewhere: list[tuple[ShareRecord, _Append]] = []
        for append in appends:
            for record, hosting in append.records:
                if hosting is not None and self._current(hosting):
                    ord_ = partitions.setdefault(hosting, len(partitions) + 1)
                    stored = share_record_to_storage(record)
                    epoch = _state_epoch(hosting, record)
                    rows[(ord_, record.group_id, stored.type)] = (
                        record.topic_id,
                        stored.key,
                        stored.value,
                        epoch,
                        hosting.generations.get(record.group_id, 0),
                    )
                elif hosting is None and (isinstance(record, ShareTombstone) or _initial(record)):
                    elsewhere.append((record, append))
                else:
                    append.fenced = True
        await self._set_elsewhere(elsewhere)
        error: BaseException | None = None
        fenced: set[int] = set()
        if rows:
            try:
                fenced = set(await self._put(list(partitions), rows))
            except Exception as exc:  # the outcome is unknown: every partition of the call reloads
                log.warning("share state write failed: %s", exc)
                error = exc
                for hosting in partitions:
                    hosting.failed = True
        gone = {h for h, o in partitions.items() if o in fenced}
        for hosting in gone:
            log.warning("share state of %s-%d fenced at epoch %d", hosting.topic, hosting.partition,
                        hosting.epoch)  # fmt: skip
            hosting.failed = True
        for append in appends:
            refused = append.fenced or any(h in gone for _, h in append.records)
            failed = error or append.error
            append.on_done(failed if failed is not None else NotHosted() if refused else None)

    async def _set_elsewhere(self, writes: list[tuple[ShareRecord, _Append]]) -> None:
        """The group coordinator's resets and deletes of partitions another node leads, one call each."""
        for record, append in writes:
            name = self._name_of(record.topic_id)
            if name is None:
                append.fenced = True
                continue
            stored = share_record_to_storage(record)
            epoch = record.state_epoch if isinstance(record, ShareSnapshot) else 0
            try:
                done = await self._pool.fetchval(
                    _SET, name, record.partition, record.group_id, record.topic_id, stored.key,
                    stored.value, epoch,
                )  # fmt: skip
            except Exception as exc:
                log.warning("share state reset of %s-%d failed: %s", name, record.partition, exc)
                append.error = exc
                continue
            append.fenced = append.fenced or not done

    async def _put(self, partitions: list[Hosting], rows: dict[tuple[int, str, int], Row]) -> list[int]:
        self.calls += 1
        keys = list(rows)
        values = [rows[k] for k in keys]
        fenced = await self._pool.fetchval(
            _PUT,
            [h.topic for h in partitions],
            [h.partition for h in partitions],
            [h.epoch for h in partitions],
            [k[0] for k in keys],
            [k[1] for k in keys],
            [k[2] for k in keys],
            [v[0] for v in values],
            [v[1] for v in values],
            [v[2] for v in values],
            [v[3] for v in values],
            [v[4] for v in values],
        )
        return list(fenced or [])

    async def load(self, topic: str, partition: int, topic_id: UUID) -> list[ShareRecord]:
        """The partition's share state as stored, after every call before it settled."""
        return (await self.load_fenced(topic, partition, topic_id))[0]

    async def load_fenced(
        self, topic: str, partition: int, topic_id: UUID
    ) -> tuple[list[ShareRecord], dict[str, int]]:
        """The partition's share state and its groups' delete generations. The generations are read
        first: a delete between the two reads leaves this load's generation behind it, so the writes
        made from it are refused and the partition is loaded again (never a stale state passing for new)."""
        async with self.lock:
            generations = {r["group_id"]: r["generation"] for r in await self._pool.fetch(
                _GENERATIONS, topic, partition)}  # fmt: skip
            rows = await self._pool.fetch(_LOAD, topic, partition, topic_id)
        records = [share_record_from_storage(storage.Record(r["kind"], r["key"], r["value"])) for r in rows]
        return records, generations


def _initial(record: ShareRecord) -> bool:
    return isinstance(record, ShareSnapshot) and record.initial


def _state_epoch(hosting: Hosting, record: ShareRecord) -> int:
    """The state epoch a leader's record is fenced by: a snapshot's own (remembered for the updates
    that follow), else the group's newest snapshot's."""
    if isinstance(record, ShareSnapshot):
        hosting.state_epochs[record.group_id] = record.state_epoch
        return record.state_epoch
    return hosting.state_epochs.get(record.group_id, 0)


class ShareHosting:
    """The tenant's hosted partitions kept equal to the partitions this node leads (`reconcile`).
    `led()` gives (topic, partition) -> lease epoch of every partition led and loaded here;
    `topic_id_of(topic)` the topic's id (None: unknown)."""

    def __init__(
        self,
        state_log: ShareStateLog,
        tenant: SharePartitions,
        led: Callable[[], dict[Key, int]],
        topic_id_of: Callable[[str], UUID | None],
    ) -> None:
        self._log = state_log
        self._tenant = tenant
        self._led = led
        self._topic_id_of = topic_id_of
        self.loads = 0

    async def reconcile(self) -> None:
        led = self._led()
        for key, hosting in list(self._log.hosted.items()):
            moved = led.get(key) != hosting.epoch or self._topic_id_of(key[0]) != hosting.topic_id
            if hosting.failed or moved:
                self._drop(key)
        for key, epoch in led.items():
            if key not in self._log.hosted:
                await self._host(key, epoch)

    async def _host(self, key: Key, epoch: int) -> None:
        topic_id = self._topic_id_of(key[0])
        if topic_id is None:
            return
        records, generations = await self._log.load_fenced(*key, topic_id)
        if self._led().get(key) != epoch or key in self._log.hosted:
            return  # lost or taken meanwhile: the next round decides
        hosting = Hosting(key[0], key[1], topic_id, epoch, generations=generations)
        for record in records:
            if isinstance(record, ShareSnapshot):
                hosting.state_epochs[record.group_id] = record.state_epoch
        self._log.hosted[key] = hosting
        self._tenant.host(topic_id, key[1], records)
        self.loads += 1
        log.info("share state of %s-%d loaded at epoch %d: %d records", *key, epoch, len(records))

    def _drop(self, key: Key) -> None:
        hosting = self._log.hosted.pop(key)
        self._tenant.unhost(hosting.topic_id, hosting.partition)
        log.info("share state of %s-%d dropped (epoch %d)", *key, hosting.epoch)

    def on_notify(self, *args: object) -> None:
        """asyncpg's listener on SHARE_CHANNEL (payload `partition/topic`): the group's coordinator changed
        the partition's state; if it is hosted here it is reloaded by the next reconcile."""
        partition, _, topic = str(args[-1]).partition("/")
        hosting = self._log.hosted.get((topic, int(partition)))
        if hosting is not None:
            hosting.failed = True

    def drop_all(self) -> None:
        for key in list(self._log.hosted):
            self._drop(key)

    async def run(self, stopping: Callable[[], bool], period_s: float = 0.1) -> None:
        """Reconcile every `period_s` (an in-memory comparison; a load only for a partition taken)."""
        while not stopping():
            try:
                await self.reconcile()
            except Exception as exc:  # the database is away: the next round tries again
                log.warning("share state reconcile failed: %s", exc)
            await asyncio.sleep(period_s)
