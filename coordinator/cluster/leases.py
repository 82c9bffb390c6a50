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
from typing import Any

__all__ = ["LeaseClock", "ShardLeases"]

_ACQUIRE = """
UPDATE kcoord_shard_lease
   SET owner = $2, epoch = epoch + 1, expires_at = now() + $3::integer * interval '1 millisecond'
 WHERE shard = $1 AND (owner IS NULL OR expires_at < now())
RETURNING epoch
"""

_RENEW = """
UPDATE kcoord_shard_lease AS lease
   SET expires_at = now() + $4::integer * interval '1 millisecond'
  FROM unnest($2::integer[], $3::bigint[]) AS held(shard, epoch)
 WHERE lease.shard = held.shard AND lease.epoch = held.epoch AND lease.owner = $1
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


class ShardLeases:
    """The shard leases one node holds, in the `kcoord_shard_lease` table of `pool` (an asyncpg
    pool or connection: anything with `fetchval`/`fetch`/`execute`).

    `margin_ms` defaults to a tenth of the TTL; `monotonic` is the clock `LeaseClock` reads (tests
    pass their own). Renew every `ttl_ms / 4` or so: a shard is lost after ttl without one.
    """

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
        self._held: dict[int, _Held] = {}

    async def acquire(self, shard: int) -> int | None:
        """Take `shard` if it is free or its lease expired: the new epoch, else None."""
        sent_at = self._monotonic()
        epoch = await self._pool.fetchval(_ACQUIRE, shard, self.node_id, self.ttl_ms)
        if epoch is None:
            return None
        clock = LeaseClock(self.ttl_ms, self.margin_ms)
        clock.renewed(sent_at)
        self._held[shard] = _Held(int(epoch), clock)
        return int(epoch)

    async def renew(self) -> set[int]:
        """Extend every held lease in one statement. Returns the shards LOST (taken over, or
        released by someone else): they are forgotten here and must be unloaded at once. A database
        error propagates and renews nothing: the clocks run out on their own. A lease whose clock ran
        out but which nobody took (same epoch) is renewed and valid again: no one else wrote the
        shard meanwhile, since any acquire would have bumped the epoch."""
        if not self._held:
            return set()
        held = dict(self._held)
        shards = list(held)
        sent_at = self._monotonic()
        rows = await self._pool.fetch(
            _RENEW, self.node_id, shards, [held[s].epoch for s in shards], self.ttl_ms
        )
        renewed = {int(row["shard"]) for row in rows}
        for shard in renewed:
            held[shard].clock.renewed(sent_at)
        lost = set(shards) - renewed
        for shard in lost:
            if self._held.get(shard) is held[shard]:  # not re-acquired meanwhile
                del self._held[shard]
        return lost

    async def release(self, shard: int) -> bool:
        """Give `shard` up (graceful handover): True if it was still ours at our epoch. Stop its
        writer first; the next owner can take it at once, without waiting for the TTL."""
        entry = self._held.pop(shard, None)
        if entry is None:
            return False
        status = await self._pool.execute(_RELEASE, shard, self.node_id, entry.epoch)
        return bool(status == "UPDATE 1")

    def forget(self, shard: int) -> None:
        """Stop renewing `shard` without releasing it (lost, or fenced: the lease is not ours)."""
        self._held.pop(shard, None)

    def epoch(self, shard: int) -> int | None:
        entry = self._held.get(shard)
        return None if entry is None else entry.epoch

    def held(self) -> dict[int, int]:
        """shard -> epoch of every lease this node believes it holds."""
        return {shard: entry.epoch for shard, entry in self._held.items()}

    def clock(self, shard: int) -> LeaseClock | None:
        entry = self._held.get(shard)
        return None if entry is None else entry.clock

    def valid(self, shard: int, now: float | None = None) -> bool:
        """The self-fence: may this node answer for `shard` from memory now?"""
        entry = self._held.get(shard)
        return entry is not None and entry.clock.valid(self._monotonic() if now is None else now)
