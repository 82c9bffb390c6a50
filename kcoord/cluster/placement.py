"""Which node leads which partition: rendezvous hashing over the live nodes, lease rows in PostgreSQL.

Each partition's preferred leader is the first live node of its assigned replicas (set by
AlterPartitionReassignments; Kafka's preferred replica is the first of the assignment), else the
live node with the highest rendezvous weight (so a node joining or leaving moves only its share).
Every poll (`tick`) a node reads the live nodes (`kcoord_node`, unexpired by PostgreSQL's `now()`)
and the partition lease rows, then (`decide`, pure):

* takes the free or expired partitions it prefers at once, and any other free one it already saw
  free at the previous poll (its preferred node may be gone: someone must lead it);
* hands over a partition it leads whose preferred leader is another live node (a node joined, or
  an election / reassignment asked for it): the target takes it at its next poll;
* reloads a partition it holds whose log stopped (a failed write).

Leases are renewed every TTL/4 between polls (`ClusterPartitions.renew`). The lease view is also
the leader cache Metadata and `ClusterLeadership.leader` answer from (bounded staleness: one poll).

A new partition (no lease row yet) is taken by its preferred leader before the change that created
it is answered (`settle`, run by kcoord/cluster/metadata_sync.py on every node before it acknowledges),
and until a node's view has its row, `leader` names that preferred live node: so Metadata on any
node names a leader when CreateTopics / CreatePartitions answers, as Kafka's controller assigns the
leaders in the same records that create the partitions (`ReplicationControlManager.createTopic`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.cluster.partitions import ClusterPartitions, Key

__all__ = ["LeaseRow", "PartitionPlacement", "decide", "preferred_leader", "rendezvous", "replica_set"]

log = logging.getLogger("kcoord.cluster.placement")

NO_LEADER = -1  # Kafka's MetadataResponse leader_id for a partition without one

_LIVE = "SELECT node_id FROM kcoord_node WHERE expires_at > now() ORDER BY node_id"
_LEASES = (
    "SELECT topic, partition, leader, epoch, expires_at < now() AS expired, replicas "
    "FROM kcoord_partition_lease"
)


@dataclass(frozen=True, slots=True)
class LeaseRow:
    leader: int | None
    epoch: int
    expired: bool
    replicas: tuple[int, ...] = ()

    @property
    def free(self) -> bool:
        return self.leader is None or self.expired


def _weight(key: Key, node_id: int) -> int:
    digest = hashlib.blake2b(f"{key[0]}\x00{key[1]}\x00{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous(key: Key, nodes: Iterable[int]) -> int | None:
    """The node with the highest weight for the partition (highest random weight hashing)."""
    return max(nodes, key=lambda n: (_weight(key, n), n), default=None)


def preferred_leader(key: Key, replicas: Sequence[int], live: Sequence[int]) -> int | None:
    """The first live assigned replica, else the rendezvous choice among the live nodes. (Kafka
    leaves a partition whose replicas are all gone offline; here any node can read the partition
    from PostgreSQL, so it falls back to every live node.)"""
    for replica in replicas:
        if replica in live:
            return replica
    return rendezvous(key, live)


def replica_set(
    key: Key, assigned: Sequence[int], live: Sequence[int], leader: int, factor: int
) -> tuple[int, ...]:
    """The replicas Metadata lists: the reassignment's list when there is one (Kafka's assignment),
    else the leader and then the live nodes in rendezvous order (the ones that would take the partition
    over next) up to the replication factor. Any live node can lead it, since its data is in PostgreSQL,
    so a dead node is replaced at once rather than listed offline (docs/cluster.md, "Replicas")."""
    if assigned:
        return tuple(assigned)
    chosen = [leader] if leader in live else []
    ranked = sorted(live, key=lambda n: (_weight(key, n), n), reverse=True)
    chosen += [n for n in ranked if n != leader][: max(factor - len(chosen), 0)]
    return tuple(chosen)


def decide(
    node_id: int,
    wanted: Iterable[Key],
    rows: dict[Key, LeaseRow],
    live: Sequence[int],
    held: Iterable[Key],
    seen_free: set[Key],
) -> tuple[list[Key], list[Key], set[Key]]:
    """(partitions to take, partitions to hand over, partitions seen free and left for now)."""
    mine = set(held)
    take: list[Key] = []
    hand_over: list[Key] = []
    still_free: set[Key] = set()
    for key in wanted:
        row = rows.get(key)
        target = preferred_leader(key, row.replicas if row else (), live)
        if key in mine:
            if target is not None and target != node_id and node_id in live:
                hand_over.append(key)
        elif row is None or row.free:
            if target == node_id or key in seen_free:
                take.append(key)
            else:
                still_free.add(key)
    return take, hand_over, still_free


class PartitionPlacement:
    """Drives one node's partition leadership. `wanted()` lists every (topic, partition) that exists
    (the topic registry's)."""

    def __init__(
        self,
        pool: Any,
        node_id: int,
        partitions: ClusterPartitions,
        wanted: Callable[[], Iterable[Key]],
        *,
        poll_ms: int = 500,
    ) -> None:
        self._pool = pool
        self.node_id = node_id
        self.partitions = partitions
        self._wanted = wanted
        self.poll_ms = poll_ms
        self.rows: dict[Key, LeaseRow] = {}
        self.live: list[int] = []
        self._seen_free: set[Key] = set()
        self._stopping = asyncio.Event()
        self._deciding = asyncio.Lock()  # one tick or settle at a time: never two leads of one key

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as this node last saw it; NO_LEADER when none (or expired)."""
        key = (topic, partition)
        if self.partitions.leads(key):
            return self.node_id
        row = self.rows.get(key)
        if row is None or row.leader is None:  # new or released: its preferred leader takes it (`settle`)
            predicted = preferred_leader(key, row.replicas if row else (), self.live)
            return NO_LEADER if predicted is None or predicted == self.node_id else predicted
        if row.expired or row.leader == self.node_id:
            return NO_LEADER
        return row.leader

    def replicas(self, topic: str, partition: int, factor: int) -> tuple[int, ...]:
        """`replica_set` for the partition as this node last saw the live nodes and its lease row."""
        key = (topic, partition)
        row = self.rows.get(key)
        return replica_set(key, row.replicas if row else (), self.live, self.leader(topic, partition), factor)

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The leader epoch Metadata reports beside `leader`: our own lease epoch when we lead it, else
        the lease row's as last seen (one poll stale at most, as a Kafka broker's metadata cache can be:
        a client sent with an old epoch gets FENCED_LEADER_EPOCH and asks again); -1 (none) while no
        one holds it, since the next acquire bumps the epoch."""
        key = (topic, partition)
        led = self.partitions.get(topic, partition)
        if led is not None:
            return led.leader_epoch
        row = self.rows.get(key)
        return -1 if row is None or row.leader is None else row.epoch

    async def refresh(self) -> None:
        live = await self._pool.fetch(_LIVE)
        rows = await self._pool.fetch(_LEASES)
        self.live = [int(r[0]) for r in live]
        self.rows = {
            (str(r["topic"]), int(r["partition"])): LeaseRow(
                None if r["leader"] is None else int(r["leader"]),
                int(r["epoch"]),
                bool(r["expired"]),
                tuple(r["replicas"] or ()),
            )
            for r in rows
        }

    async def settle(self) -> None:
        """Take at once the unheld partitions (no lease row, or released: new, or a deleted topic's
        name created again) this node is the preferred leader of; everything else waits for the next
        tick (`_seen_free` untouched, so no node takes another's partition early)."""
        async with self._deciding:
            await self.refresh()
            if any(self._released_here(key) for key in self.partitions.held()):
                await self.partitions.renew()  # drops the leases a deletion took (the name is back)
            held = self.partitions.held()
            take = [
                key
                for key in self._wanted()
                if key not in held
                and ((row := self.rows.get(key)) is None or row.leader is None)
                and preferred_leader(key, row.replicas if row else (), self.live) == self.node_id
            ]
            await asyncio.gather(*(self.partitions.lead(key) for key in take))  # independent: at once

    def _released_here(self, key: Key) -> bool:
        row = self.rows.get(key)
        return row is not None and row.leader is None

    async def tick(self) -> None:
        async with self._deciding:
            await self._tick()

    async def _tick(self) -> None:
        await self.refresh()
        held = self.partitions.held()
        for key in held:
            if self.partitions.get(*key) is None and self.partitions.leases.valid(key):
                await self.partitions.reload(key)
        take, hand_over, self._seen_free = decide(
            self.node_id, self._wanted(), self.rows, self.live, held, self._seen_free
        )
        for key in hand_over:
            await self.partitions.resign(key)
        for key in take:
            await self.partitions.lead(key)

    async def run(self) -> None:
        """Poll and renew until `stop()`; database errors are logged and retried at the next round
        (the lease clocks run out on their own meanwhile: the self-fence)."""
        renew_s = self.partitions.leases.ttl_ms / 4000
        next_poll = 0.0
        while not self._stopping.is_set():
            try:
                await self.partitions.renew()
                if time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + self.poll_ms / 1000
                    await self.tick()
            except Exception as exc:  # the database is away: retried next round
                log.warning("partition placement round failed: %r", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), min(renew_s, self.poll_ms / 1000))

    def stop(self) -> None:
        self._stopping.set()
