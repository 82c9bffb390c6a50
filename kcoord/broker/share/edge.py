"""`ShareEdge`: what the ShareFetch and ShareAcknowledge handlers share on a node: the share-partition
tenant, the share sessions, and the parked fetches waiting for records to become acquirable."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from kcoord.broker.share.sessions import MAX_SHARE_SESSIONS, ShareSessionCache
from kcoord.coordinator.share_partitions import SharePartitions

__all__ = ["ShareEdge", "ShareWaiters"]

WaitKey = tuple[str, UUID, int]  # (group id, topic id, partition): Kafka's DelayedShareFetchGroupKey


class ShareWaiters:
    """Parked ShareFetches by share partition. The tenant calls `wake` when records of a share partition
    become AVAILABLE again (release, lock expiry, reset): Kafka's
    `replicaManager.completeDelayedShareFetchRequest(DelayedShareFetchGroupKey)`."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[WaitKey, dict[Callable[[], None], None]] = {}

    def add(self, key: WaitKey, wake: Callable[[], None]) -> None:
        self._waiting.setdefault(key, {})[wake] = None

    def remove(self, key: WaitKey, wake: Callable[[], None]) -> None:
        waiting = self._waiting.get(key)
        if waiting is not None:
            waiting.pop(wake, None)
            if not waiting:
                del self._waiting[key]

    def wake(self, group_id: str, topic_id: UUID, partition: int) -> None:
        # a copy: a woken fetch answers and removes itself while we iterate
        for wake in list(self._waiting.get((group_id, topic_id, partition), ())):
            wake()

    def __len__(self) -> int:
        return sum(len(waiting) for waiting in self._waiting.values())


class ShareEdge:
    """One per node, built with the server context once the tenant has been replayed."""

    __slots__ = ("partitions", "sessions", "waiters")

    def __init__(self, partitions: SharePartitions, max_share_sessions: int = MAX_SHARE_SESSIONS) -> None:
        self.partitions = partitions
        self.sessions = ShareSessionCache(max_share_sessions)
        self.waiters = ShareWaiters()
        partitions.on_change(self.waiters.wake)
