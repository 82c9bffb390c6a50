"""Shard ownership: one lease row per shard with an epoch (`kcoord_shard_lease`), and the owner's
self-fence on its own monotonic clock.

* `acquire(shard)` takes a shard only when it is free (released) or its lease expired, by PostgreSQL's
  `now()`, and bumps its epoch. Every write of the new owner carries that epoch and `kcoord_append`
  refuses any other (migrations.py): this is what keeps a replaced owner's writes out, whatever the
  clocks say. Kafka's equivalent is the leader epoch of a `__consumer_offsets` partition, handed out
  by the controller (`CoordinatorRuntime.scheduleLoadOperation(tp, partitionEpoch)`).
* `renew()` extends every held (shard, epoch) in one statement; a shard it cannot find at its epoch
  was taken over: it is reported lost and forgotten.
* `LeaseClock` is the self-fence rule: a lease renewed by a statement *sent* at monotonic time `t` is
  valid here until `t + ttl - margin`. PostgreSQL set `expires_at = now() + ttl` with a `now()` no
  earlier than that send, and a taker needs its own `now()` past `expires_at`; so this node stops
  answering from memory before anyone can take over, and the margin absorbs clock-rate drift and
  small steps of the database host's clock. The database's epoch check alone decides durability;
  the clock only bounds how stale an in-memory read (OffsetFetch, Heartbeat) can be.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["LeaseClock", "PartitionLeases", "ShardLeases"]

# `previous` (the holder before this statement's snapshot; NULL when free) labels the acquisition for
# /metrics only: the epoch bump and its WHERE clause alone decide who holds the lease.
_ACQUIRE = """
WITH before AS (SELECT owner FROM kcoord_shard_lease WHERE shard = $1)
UPDATE kcoord_shard_lease
   SET owner = $2, epoch = epoch + 1, expires_at = now() + $3::integer * interval '1 millisecond'
 WHERE shard = $1 AND (owner IS NULL OR expires_at < now())
RETURNING epoch, (SELECT owner FROM before) AS previous
"""

# The held rows are locked in key order first, as `kcoord_flush` locks them (migration 4): the node's
# own flush and renewal each lock many of the same rows, and the same order means neither waits for
# the other in a cycle (a deadlock PostgreSQL would break by failing one of them).
_RENEW = """
UPDATE kcoord_shard_lease AS lease
   SET expires_at = now() + $4::integer * interval '1 millisecond'
  FROM (SELECT l.shard FROM kcoord_shard_lease AS l
          JOIN unnest($2::integer[], $3::bigint[]) AS held(shard, epoch)
            ON l.shard = held.shard AND l.epoch = held.epoch AND l.owner = $1
         ORDER BY l.shard FOR NO KEY UPDATE OF l) AS locked
 WHERE lease.shard = locked.shard
RETURNING lease.shard
"""

# Free, not yet taken: the epoch stays (the next acquire bumps it), so an append of ours still in
# flight commits and the next owner, loading after its bump, sees it.
_RELEASE = """
UPDATE kcoord_shard_lease SET owner = NULL, expires_at = '-infinity'
 WHERE shard = $1 AND owner = $2 AND epoch = $3
"""


@dataclass(slots=True)
class LeaseClock:
    """When this node must stop serving a shard from memory, on its monotonic clock (seconds)."""

    ttl_ms: int
    margin_ms: int
    valid_until: float = field(default=-math.inf)
    """Monotonic seconds; -inf before the first good renewal."""

    def __post_init__(self) -> None:
        if not 0 <= self.margin_ms < self.ttl_ms:
            raise ValueError(f"need 0 <= margin_ms < ttl_ms, got margin {self.margin_ms} ttl {self.ttl_ms}")

    def renewed(self, sent_at: float) -> None:
        """A renewal (or the acquire) sent at monotonic `sent_at` succeeded. A late answer to an
        older renewal never shortens the validity a newer one gave."""
        self.valid_until = max(self.valid_until, sent_at + (self.ttl_ms - self.margin_ms) / 1000)

    def valid(self, now: float) -> bool:
        """May this node still answer from memory at monotonic `now`?"""
        return now < self.valid_until

    def remaining_ms(self, now: float) -> int:
        return max(0, int((self.valid_until - now) * 1000)) if self.valid_until > -math.inf else 0


@dataclass(slots=True)
class _Held:
    epoch: int
    clock: LeaseClock


K = TypeVar("K", int, tuple[str, int])


class _Leases(Generic[K]):
    """The leases of one kind (shards, partitions) one node holds: the acquire / renew / release and
    self-fence rules, whatever the key; subclasses give the table's statements."""

    def __init__(
        self,
        pool: Any,
        node_id: int,
        ttl_ms: int,
        *,
        margin_ms: int | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_ms <= 0:
            raise ValueError(f"ttl_ms must be positive, not {ttl_ms}")
        self._pool = pool
        self.node_id = node_id
        self.ttl_ms = ttl_ms
        self.margin_ms = ttl_ms // 10 if margin_ms is None else margin_ms
        LeaseClock(ttl_ms, self.margin_ms)  # validates the margin now, not at the first acquire
        self._monotonic = monotonic
        self._held: dict[K, _Held] = {}
        self.renewals: dict[str, int] = {}
        """result -> renewal statements: ok (every held lease extended), lost (some were taken
        over), failed (the database did not answer): for /metrics."""
        self.acquisitions: dict[str, int] = {}
        """previous holder -> leases acquired: free (released or never held), self (our own lease
        ran out and nobody took it), other (another node's ran out: a failover): for /metrics."""

    # -- the table's statements ------------------------------------------------------------------------
    async def _take(self, key: K) -> Any:
        """The acquire's row (epoch, previous holder), None when the lease is held by someone."""
        raise NotImplementedError

    async def _extend(self, held: dict[K, _Held]) -> set[K]:
        raise NotImplementedError

    async def _free(self, key: K, epoch: int) -> bool:
        raise NotImplementedError

    # -- the rules -------------------------------------------------------------------------------------
    async def acquire(self, key: K) -> int | None:
        """Take `key` if it is free or its lease expired: the new epoch, else None."""
        sent_at = self._monotonic()
        row = await self._take(key)
        if row is None:
            return None
        epoch, previous = int(row["epoch"]), row["previous"]
        how = "free" if previous is None else "self" if previous == self.node_id else "other"
        self.acquisitions[how] = self.acquisitions.get(how, 0) + 1
        self._hold(key, epoch, sent_at)
        return epoch

    def _hold(self, key: K, epoch: int, sent_at: float) -> None:
        clock = LeaseClock(self.ttl_ms, self.margin_ms)
        clock.renewed(sent_at)
        self._held[key] = _Held(epoch, clock)

    async def renew(self) -> set[K]:
        """Extend every held lease in one statement. Returns the keys LOST (taken over, or
        released by someone else): they are forgotten here and must be unloaded at once. A database
        error propagates and renews nothing: the clocks run out on their own. A lease whose clock ran
        out but which nobody took (same epoch) is renewed and valid again: no one else wrote the
        shard meanwhile, since any acquire would have bumped the epoch."""
        if not self._held:
            return set()
        held = dict(self._held)
        sent_at = self._monotonic()
        try:
            renewed = await self._extend(held)
        except Exception:
            self._count_renewal("failed")
            raise
        self._count_renewal("ok" if renewed >= set(held) else "lost")
        for key in renewed:
            held[key].clock.renewed(sent_at)
        lost = set(held) - renewed
        for key in lost:
            if self._held.get(key) is held[key]:  # not re-acquired meanwhile
                del self._held[key]
        return lost

    def _count_renewal(self, result: str) -> None:
        self.renewals[result] = self.renewals.get(result, 0) + 1

    async def release(self, key: K) -> bool:
        """Give `key` up (graceful handover): True if it was still ours at our epoch. Stop its
        writer first; the next owner can take it at once, without waiting for the TTL."""
        entry = self._held.pop(key, None)
        if entry is None:
            return False
        return await self._free(key, entry.epoch)

    def forget(self, key: K) -> None:
        """Stop renewing `key` without touching its row (it was found taken over)."""
        self._held.pop(key, None)

    def epoch(self, key: K) -> int | None:
        entry = self._held.get(key)
        return None if entry is None else entry.epoch

    def held(self) -> dict[K, int]:
        """key -> epoch of every lease this node believes it holds."""
        return {key: entry.epoch for key, entry in self._held.items()}

    def clock(self, key: K) -> LeaseClock | None:
        entry = self._held.get(key)
        return None if entry is None else entry.clock

    def valid(self, key: K, now: float | None = None) -> bool:
        """The self-fence: may this node answer for `key` from memory now?"""
        entry = self._held.get(key)
        return entry is not None and entry.clock.valid(self._monotonic() if now is None else now)


class ShardLeases(_Leases[int]):
    """The shard leases one node holds, in the `kcoord_shard_lease` table of `pool` (an asyncpg
    pool or connection: anything with `fetchval`/`fetch`/`execute`).

    `margin_ms` defaults to a tenth of the TTL; `monotonic` is the clock `LeaseClock` reads (tests
    pass their own). Renew every `ttl_ms / 4` or so: a shard is lost after ttl without one.
    """

    async def _take(self, key: int) -> Any:
        return await self._pool.fetchrow(_ACQUIRE, key, self.node_id, self.ttl_ms)

    async def _extend(self, held: dict[int, _Held]) -> set[int]:
        shards = list(held)
        rows = await self._pool.fetch(
            _RENEW, self.node_id, shards, [held[s].epoch for s in shards], self.ttl_ms
        )
        return {int(row["shard"]) for row in rows}

    async def _free(self, key: int, epoch: int) -> bool:
        status = await self._pool.execute(_RELEASE, key, self.node_id, epoch)
        return bool(status == "UPDATE 1")


# A partition's row is made by its first acquire (topics come and go; shards are fixed at init).
_PARTITION_ACQUIRE = """
WITH before AS (SELECT leader FROM kcoord_partition_lease WHERE topic = $1 AND partition = $2)
INSERT INTO kcoord_partition_lease AS lease (topic, partition, leader, epoch, expires_at)
VALUES ($1, $2, $3, 1, now() + $4::integer * interval '1 millisecond')
ON CONFLICT (topic, partition) DO UPDATE
   SET leader = excluded.leader, epoch = lease.epoch + 1, expires_at = excluded.expires_at
 WHERE lease.leader IS NULL OR lease.expires_at < now()
RETURNING epoch, (SELECT leader FROM before) AS previous
"""

_PARTITION_RENEW = """
UPDATE kcoord_partition_lease AS lease
   SET expires_at = now() + $5::integer * interval '1 millisecond'
  FROM (SELECT l.topic, l.partition FROM kcoord_partition_lease AS l
          JOIN unnest($2::text[], $3::integer[], $4::bigint[]) AS held(topic, partition, epoch)
            ON l.topic = held.topic AND l.partition = held.partition AND l.epoch = held.epoch
           AND l.leader = $1
         ORDER BY l.topic, l.partition FOR NO KEY UPDATE OF l) AS locked
 WHERE lease.topic = locked.topic AND lease.partition = locked.partition
RETURNING lease.topic, lease.partition
"""

_PARTITION_RELEASE = """
UPDATE kcoord_partition_lease SET leader = NULL, expires_at = '-infinity'
 WHERE topic = $1 AND partition = $2 AND leader = $3 AND epoch = $4
"""

# The leader bumps its own epoch: whatever it still has in flight at the old one is fenced, so it
# can reload the partition from the table and trust what it reads (after an unknown outcome).
_PARTITION_REFENCE = """
UPDATE kcoord_partition_lease
   SET epoch = epoch + 1, expires_at = now() + $5::integer * interval '1 millisecond'
 WHERE topic = $1 AND partition = $2 AND leader = $3 AND epoch = $4
RETURNING epoch
"""


class PartitionLeases(_Leases[tuple[str, int]]):
    """The partition leader leases one node holds (`kcoord_partition_lease`, migration 3): the same
    rules as `ShardLeases`, keyed by (topic, partition). The epoch is what `kcoord_partition_append`
    checks; Kafka's equivalent is the partition leader epoch the controller hands out."""

    async def _take(self, key: tuple[str, int]) -> Any:
        return await self._pool.fetchrow(_PARTITION_ACQUIRE, key[0], key[1], self.node_id, self.ttl_ms)

    async def _extend(self, held: dict[tuple[str, int], _Held]) -> set[tuple[str, int]]:
        keys = list(held)
        rows = await self._pool.fetch(
            _PARTITION_RENEW,
            self.node_id,
            [k[0] for k in keys],
            [k[1] for k in keys],
            [held[k].epoch for k in keys],
            self.ttl_ms,
        )
        return {(str(row["topic"]), int(row["partition"])) for row in rows}

    async def _free(self, key: tuple[str, int], epoch: int) -> bool:
        status = await self._pool.execute(_PARTITION_RELEASE, key[0], key[1], self.node_id, epoch)
        return bool(status == "UPDATE 1")

    async def refence(self, key: tuple[str, int]) -> int | None:
        """Bump our own epoch of a held partition: the new epoch, None if it is no longer ours."""
        entry = self._held.get(key)
        if entry is None:
            return None
        sent_at = self._monotonic()
        epoch = await self._pool.fetchval(
            _PARTITION_REFENCE, key[0], key[1], self.node_id, entry.epoch, self.ttl_ms
        )
        if epoch is None:
            self._held.pop(key, None)
            return None
        self._hold(key, int(epoch), sent_at)
        return int(epoch)
