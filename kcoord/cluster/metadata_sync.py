"""Read-your-writes for the cluster-wide records: a change a node has answered is on every live node.

Kafka's brokers follow the controller's metadata log within milliseconds (each broker fetches
`__cluster_metadata` continuously, `BrokerMetadataPublisher`), and its CreateTopics answers once the
controller committed the records (`ControllerApis.handleCreateTopics`), with the partitions' leaders
already chosen (`ReplicationControlManager.createTopic`). Here every node follows `kcoord_metadata`:

* **Followers** (`run`): woken by the `kcoord_metadata` notification `kcoord_metadata_put` sends (or
  every poll, 500 ms, when a notification was missed), a node reads the rows past its last sequence
  number (`MetadataLog.catch_up`), takes the new partitions it is the preferred leader of
  (`PartitionPlacement.settle`), then acknowledges with NOTIFY `kcoord_metadata_ack` "node:seq".
* **The writer** (`wait_acked`, run by `MetadataLog` after a put and before the caller is answered):
  waits until every live node (its `kcoord_node` row unexpired by PostgreSQL's clock) has
  acknowledged the written sequence number. A node that died stops renewing, so its row expires
  within the lease TTL and it stops counting: the wait is bounded by the TTL (plus one poll), and
  past `bound_s` it answers anyway with a warning (the follower's poll still catches up within 500 ms).

Acknowledgements travel as notifications, not rows, so the schema is unchanged; a writer whose
LISTEN connection is down cannot hear them and does not wait (it logs why once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kcoord.cluster.metadata import METADATA_CHANNEL

__all__ = ["ACK_CHANNEL", "MetadataSync"]

log = logging.getLogger("kcoord.cluster")

ACK_CHANNEL = "kcoord_metadata_ack"
_LIVE = "SELECT node_id FROM kcoord_node WHERE expires_at > now()"
_RECHECK_S = 0.1  # how often the writer re-reads the live nodes while waiting (a dead one expires)


class MetadataSync:
    """One node's follower of `kcoord_metadata` and its writer's wait for the other nodes.

    `catch_up()` applies the rows past the node's last sequence number and returns (rows, last seq);
    `settle()` takes the new partitions this node prefers; `listening()` says whether notifications
    reach this node."""

    def __init__(
        self,
        pool: Any,
        node_id: int,
        catch_up: Callable[[], Awaitable[tuple[int, int]]],
        settle: Callable[[], Awaitable[None]],
        listening: Callable[[], bool],
        *,
        bound_s: float,
        poll_s: float,
    ) -> None:
        self._pool = pool
        self.node_id = node_id
        self._catch_up = catch_up
        self._settle = settle
        self._listening = listening
        self.bound_s = bound_s
        self._poll_s = poll_s
        self._wake = asyncio.Event()
        self._acked = asyncio.Event()
        self.acks: dict[int, int] = {}  # node id -> the highest sequence number it acknowledged
        self.waits_timed_out = 0
        self._acked_seq = -1  # the last sequence number this node acknowledged

    # -- notifications (asyncpg listener callbacks: connection, pid, channel, payload) ---------------
    def on_change(self, *args: Any) -> None:
        self._wake.set()

    def on_ack(self, *args: Any) -> None:
        node, _, seq = str(args[-1]).partition(":")
        try:
            node_id, acked = int(node), int(seq)
        except ValueError:
            log.warning("metadata ack %r: not node:seq, ignored", args[-1])
            return
        if acked > self.acks.get(node_id, -1):
            self.acks[node_id] = acked
            self._acked.set()

    # -- follower --------------------------------------------------------------------------------
    async def run(self, stopping: Callable[[], bool]) -> None:
        while not stopping():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll_s)
            notified = self._wake.is_set()
            self._wake.clear()
            try:
                await self.follow(notified)
            except Exception as exc:  # the database is away: the next round tries again
                log.warning("metadata follow failed: %r", exc)

    async def follow(self, notified: bool) -> None:
        """Catch up; on news (or when told there is some) take new partitions and acknowledge. A node
        that just joined acknowledges its first round too: it replayed the table before it registered,
        so a writer that counted it live meanwhile may wait for it with nothing new to read."""
        rows, last_seq = await self._catch_up()
        if rows or notified or last_seq > self._acked_seq:
            await self._settle()
            await self._pool.execute("SELECT pg_notify($1, $2)", ACK_CHANNEL, f"{self.node_id}:{last_seq}")
            self._acked_seq = last_seq

    # -- writer ----------------------------------------------------------------------------------
    async def wait_acked(self, seq: int) -> float:
        """Wait until every live node acknowledged `seq` (at most `bound_s`); the seconds waited.

        A node that expired meanwhile (killed) was still live when the others took the new partitions,
        so they left its share to it: then one more round, everyone settling again among the nodes
        now live, so the answer never names a dead leader."""
        started = time.monotonic()
        if not self._listening():
            log.warning("metadata seq %d: not listening, answered without waiting for the nodes", seq)
            return 0.0
        before = await self._live()
        after = await self._round(seq, started + self.bound_s)
        if after is not None and before - after:
            log.info("metadata seq %d: nodes %s left while it settled, settling again", seq,
                     sorted(before - after))  # fmt: skip
            for node_id in after:
                self.acks.pop(node_id, None)
            await self._pool.execute("SELECT pg_notify($1, $2)", METADATA_CHANNEL, str(seq))
            await self._round(seq, time.monotonic() + 2 * self._poll_s)
        return time.monotonic() - started

    async def _round(self, seq: int, deadline: float) -> set[int] | None:
        """Until every live node acknowledged `seq`: the live nodes then, None past the deadline."""
        while True:
            self._acked.clear()  # before reading: an ack arriving meanwhile wakes the next wait
            live = await self._live()
            missing = sorted(n for n in live if self.acks.get(n, -1) < seq)
            now = time.monotonic()
            if not missing:
                return live
            if now >= deadline:
                self.waits_timed_out += 1
                log.warning("metadata seq %d: nodes %s did not acknowledge in time", seq, missing)
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._acked.wait(), min(_RECHECK_S, deadline - now))

    async def _live(self) -> set[int]:
        return {int(r[0]) for r in await self._pool.fetch(_LIVE)}
