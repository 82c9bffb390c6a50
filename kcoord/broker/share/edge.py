"""`ShareEdge`: what the ShareFetch and ShareAcknowledge handlers share on a node: the share-partition
tenant, the share sessions, and the parked fetches waiting for records to become acquirable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
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
        """Called by the tenant in the middle of its own change: the woken fetches run on the next loop
        turn, so their acquisition never re-enters the tenant (a woken fetch that has answered meanwhile
        ignores the call)."""
        waiting = self._waiting.get((group_id, topic_id, partition))
        if not waiting:
            return
        loop = asyncio.get_running_loop()
        for wake in list(waiting):
            loop.call_soon(wake)

    def __len__(self) -> int:
        return sum(len(waiting) for waiting in self._waiting.values())


class ShareEdge:
    """One per node, built with the server context once the tenant has been replayed. It is the group
    side's ShareMemberListener (kcoord/coordinator/groups/share/service.py): the records of a member that
    left or was fenced are released; a deleted group's sessions and share-partition state go with it."""

    __slots__ = ("partitions", "sessions", "waiters")

    def __init__(self, partitions: SharePartitions, max_share_sessions: int = MAX_SHARE_SESSIONS) -> None:
        self.partitions = partitions
        self.sessions = ShareSessionCache(max_share_sessions)
        self.waiters = ShareWaiters()
        partitions.on_change(self.waiters.wake)

    def member_left(self, group_id: str, member_id: str) -> None:
        """The group side saw the member leave or fenced it: its records are released (the seam's
        contract). Its share session stays: Kafka ends a session only with its epoch -1 or with the
        connection that opened it (`connection_closed`)."""
        self.partitions.release_member(group_id, member_id)

    def connection_closed(self, connection_id: int) -> None:
        """A client connection closed: the share sessions it opened end and their members' records are
        released at once (ShareSessionCache.maybeRemoveAndNotifyListenersOnMemberLeave ->
        SharePartitionManager's ShareGroupListener.onMemberLeave), not only when their locks expire."""
        for session in self.sessions.connection_closed(connection_id):
            self.partitions.release_member(session.group_id, session.member_id)

    def group_deleted(self, group_id: str) -> None:
        self.sessions.remove_group(group_id)
        self.partitions.delete(group_id, None, _ignore)

    def topics_deleted(self, topic_ids: Collection[UUID]) -> None:
        self.partitions.delete_topics(topic_ids)


def _ignore(_answers: object) -> None:
    """A deleted group's share-partition state needs no answer: nobody waits for it."""
