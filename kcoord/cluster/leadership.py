"""`ClusterLeadership`: the `PartitionLeadership` port (kcoord/broker/topics/leadership.py) for a cluster
whose partitions live in PostgreSQL.

* `leader` answers from the placement's lease view (`PartitionPlacement.leader`; -1 without one).
* `elect` (ElectLeaders, Kafka's `ReplicationControlManager.electLeader`): PREFERRED answers
  ELECTION_NOT_NEEDED when the preferred leader (`placement.preferred_leader`) already leads,
  PREFERRED_LEADER_NOT_AVAILABLE when there is no live node to prefer, and otherwise frees the lease
  so the preferred node takes it at its next poll; UNCLEAN answers ELECTION_NOT_NEEDED while any
  leader holds an unexpired lease, else NONE (the placement takes it).
* `reassign` (AlterPartitionReassignments): the replicas are checked against the live nodes
  (`validate_replicas`), stored as the partition's assignment, and the lease freed when its leader
  is not the new preferred one. No data is copied (every node reads the partition from PostgreSQL),
  so a reassignment completes as soon as the target takes the lease: none is ever listed as
  ongoing, and cancelling answers NO_REASSIGNMENT_IN_PROGRESS, as a finished one does in Kafka.

Freeing a lease (`leader = NULL`, expired) does not change its epoch: the old leader's renewal finds
its row no longer its own and drops the partition, its appends already in flight still commit, and
the next leader's acquire bumps the epoch, fencing anything later, then loads after it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from kcoord.broker.topics.leadership import (
    ELECTION_NOT_NEEDED,
    NO_ERROR,
    NO_REASSIGNMENT_IN_PROGRESS,
    Done,
    ElectionType,
    Outcome,
    Reassignment,
    TopicPartition,
    validate_replicas,
)
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC
from kcoord.cluster.placement import NO_LEADER, PartitionPlacement, preferred_leader
from kcoord.protocol.errors import ErrorCode

__all__ = ["ClusterLeadership"]

log = logging.getLogger("kcoord.cluster")

# How long CreateTopics / CreatePartitions wait for a manually assigned partition's first live replica
# to take it (it does at its next placement poll, 500 ms): past it the answer goes out anyway.
_ASSIGNED_WAIT_S = 3.0

_FREE = (
    "UPDATE kcoord_partition_lease SET leader = NULL, expires_at = '-infinity' "
    "WHERE topic = $1 AND partition = $2"
)
_ASSIGN = """
INSERT INTO kcoord_partition_lease AS lease (topic, partition, replicas) VALUES ($1, $2, $3::integer[])
ON CONFLICT (topic, partition) DO UPDATE SET replicas = excluded.replicas
"""
# new ApiError(Errors.X): the code's default message (Errors.java)
_PREFERRED_NOT_AVAILABLE = Outcome(
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."
)
_ELIGIBLE_NOT_AVAILABLE = Outcome(
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available."
)


class ClusterLeadership:
    def __init__(
        self,
        pool: Any,
        placement: PartitionPlacement,
        shard_owner: Callable[[int], int | None] | None = None,
        replication_factor: Callable[[str], int] = lambda topic: 1,
    ) -> None:
        self._pool = pool
        self._placement = placement
        self._replication_factor = replication_factor  # the topic registry's, as CreateTopics stored it
        # `__consumer_offsets` partition N is led by the owner of group shard N (the membership's view).
        self._shard_owner = shard_owner
        self._tasks: set[asyncio.Future[Any]] = set()

    def leader(self, topic: str, partition: int) -> int:
        if topic == OFFSETS_TOPIC and self._shard_owner is not None:
            owner = self._shard_owner(partition)
            return NO_LEADER if owner is None else owner
        return self._placement.leader(topic, partition)

    def leader_epoch(self, topic: str, partition: int) -> int:
        if topic == OFFSETS_TOPIC:
            return 0  # the offsets view keeps epoch 0: the shard's epoch is in its offsets (docs/compat.md)
        return self._placement.leader_epoch(topic, partition)

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        if topic == OFFSETS_TOPIC:
            leader = self.leader(topic, partition)
            return () if leader == NO_LEADER else (leader,)  # the shard's owner alone (docs/compat.md)
        return self._placement.replicas(topic, partition, self._replication_factor(topic))

    def in_sync_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        live = self._placement.live
        return tuple(node for node in self.replicas(topic, partition) if node in live)

    def elect(self, election_type: ElectionType, partitions: Sequence[TopicPartition], on_done: Done) -> None:
        self._spawn(self._elect(election_type, partitions, on_done), partitions, on_done)

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int] | None], on_done: Done) -> None:
        self._spawn(self._reassign(targets, on_done), list(targets), on_done)

    def reassignments(self) -> Mapping[TopicPartition, Reassignment]:
        return {}

    def assign_created(
        self, replicas: Mapping[TopicPartition, Sequence[int]], on_done: Callable[[], None]
    ) -> None:
        if not replicas:
            on_done()
            return
        task = asyncio.ensure_future(self._assign_created(replicas))
        self._tasks.add(task)

        def finished(done: asyncio.Future[None]) -> None:
            self._tasks.discard(done)
            if not done.cancelled() and (error := done.exception()) is not None:
                # The topic exists either way: its replicas stay the placement's (any node can lead it).
                log.warning("the manual replica assignment of new partitions was not stored: %r", error)
            on_done()

        task.add_done_callback(finished)

    async def _assign_created(self, replicas: Mapping[TopicPartition, Sequence[int]]) -> None:
        """Store each list as the partition's assignment (the lease row may not exist yet: the
        placement's first take honours it), hand a partition already taken to its first live replica,
        then wait (bounded) until every one is led by it, so the answer's Metadata names that leader
        as Kafka's does (ReplicationControlManager.createTopic: the PartitionRecord's leader is the
        first live replica)."""
        placement = self._placement
        for tp, nodes in replicas.items():
            await self._pool.execute(_ASSIGN, tp.topic, tp.partition, list(nodes))
        deadline = time.monotonic() + _ASSIGNED_WAIT_S
        while True:
            await placement.refresh()
            waiting = False
            for tp, nodes in replicas.items():
                key = (tp.topic, tp.partition)
                row = placement.rows.get(key)
                target = preferred_leader(key, nodes, placement.live)
                if row is not None and not row.free and row.leader != target:
                    await self._pool.execute(_FREE, *key)
                waiting = waiting or row is None or row.free or row.leader != target
            if not waiting or time.monotonic() >= deadline:
                return
            await asyncio.sleep(placement.poll_ms / 4000)

    async def _elect(
        self, election_type: ElectionType, partitions: Sequence[TopicPartition], on_done: Done
    ) -> None:
        placement = self._placement
        await placement.refresh()
        outcomes: dict[TopicPartition, Outcome] = {}
        for tp in partitions:
            key = (tp.topic, tp.partition)
            row = placement.rows.get(key)
            leader = None if row is None or row.free else row.leader
            if election_type is ElectionType.UNCLEAN:
                if leader is not None:
                    outcomes[tp] = ELECTION_NOT_NEEDED
                else:
                    outcomes[tp] = NO_ERROR if placement.live else _ELIGIBLE_NOT_AVAILABLE
                continue
            target = preferred_leader(key, row.replicas if row else (), placement.live)
            if target is None:
                outcomes[tp] = _PREFERRED_NOT_AVAILABLE
            elif leader == target:
                outcomes[tp] = ELECTION_NOT_NEEDED
            else:
                await self._pool.execute(_FREE, *key)
                outcomes[tp] = NO_ERROR
        on_done(outcomes)

    async def _reassign(self, targets: Mapping[TopicPartition, Sequence[int] | None], on_done: Done) -> None:
        placement = self._placement
        await placement.refresh()
        outcomes: dict[TopicPartition, Outcome] = {}
        for tp, replicas in targets.items():
            if replicas is None:
                outcomes[tp] = NO_REASSIGNMENT_IN_PROGRESS
                continue
            invalid = validate_replicas(replicas, placement.live)
            if invalid is not None:
                outcomes[tp] = invalid
                continue
            key = (tp.topic, tp.partition)
            await self._pool.execute(_ASSIGN, *key, list(replicas))
            row = placement.rows.get(key)
            if (
                row is not None
                and not row.free
                and row.leader != preferred_leader(key, replicas, placement.live)
            ):
                await self._pool.execute(_FREE, *key)
            outcomes[tp] = NO_ERROR
        on_done(outcomes)

    def _spawn(self, work: Awaitable[None], partitions: Sequence[TopicPartition], on_done: Done) -> None:
        """Run `work`; if the database fails it, every partition gets UNKNOWN_SERVER_ERROR (Kafka's
        ApiError.fromThrowable of an unexpected exception) so the request is still answered."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)

        def finished(done: asyncio.Future[None]) -> None:
            self._tasks.discard(done)
            error = None if done.cancelled() else done.exception()
            if done.cancelled() or error is not None:
                failed = Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"the cluster database failed: {error!r}")
                on_done(dict.fromkeys(partitions, failed))

        task.add_done_callback(finished)
