"""Share sessions (KIP-932): which partitions a share consumer fetches from this node, and the epoch
its next request must carry. Kafka's `server/share/session/ShareSessionCache` and `ShareSession`, and
`SharePartitionManager.newContext` / `acknowledgeSessionUpdate` (share/SharePartitionManager.java).

A session is keyed by (group id, member id). ShareFetch epoch 0 opens one (replacing any old one), a
positive epoch must equal the session's expected epoch (the previous + 1, wrapping to 1) and updates its
partitions (the request's topics are added, `forgotten_topics_data` removed), -1 closes it.
`max.share.sessions` bounds the cache: a new session beyond it is SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

from kcoord.protocol.errors import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "MAX_SHARE_SESSIONS",
    "ShareContext",
    "ShareSession",
    "ShareSessionCache",
    "next_epoch",
]

INITIAL_EPOCH, FINAL_EPOCH = 0, -1  # ShareRequestMetadata.INITIAL_EPOCH / FINAL_EPOCH
MAX_SHARE_SESSIONS = 2000  # group.share.max.share.sessions (ShareGroupConfig), Kafka's default
_INT32_MAX = 2**31 - 1

TopicPartition = tuple[UUID, int]


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch: a closed session stays closed, the epoch wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(slots=True)
class ShareSession:
    """One member's session: its partitions in the order they were added, and the epoch its next
    request must carry."""

    group_id: str
    member_id: str
    epoch: int
    connection_id: int = 0
    """The connection that opened it: the session ends when that connection closes."""
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # an ordered set

    def update(self, added: Iterable[TopicPartition], forgotten: Iterable[TopicPartition]) -> None:
        """ShareSession.update: the request's partitions join, the forgotten ones leave."""
        for key in added:
            self.partitions.setdefault(key, None)
        for key in forgotten:
            self.partitions.pop(key, None)


@dataclass(frozen=True, slots=True)
class ShareContext:
    """What one ShareFetch works with (Kafka's ShareSessionContext / FinalContext): the session, whether
    the answer lists every partition of it (`full`: a new session) or only those with news, and whether
    the request closes the session (`final`: acknowledgements only, nothing is fetched)."""

    session: ShareSession
    full: bool
    final: bool


class ShareSessionCache:
    """The node's share sessions, at most `max_sessions` of them (ShareSessionCache)."""

    __slots__ = ("_by_connection", "_sessions", "max_sessions")

    def __init__(self, max_sessions: int = MAX_SHARE_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        # connection id -> the sessions it opened (some may have been replaced or closed since)
        self._by_connection: dict[int, set[tuple[str, str]]] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def remove_group(self, group_id: str) -> None:
        """The group is gone: none of its members' sessions stay."""
        for key in [key for key in self._sessions if key[0] == group_id]:
            del self._sessions[key]

    def __len__(self) -> int:
        return len(self._sessions)

    def connection_closed(self, connection_id: int) -> list[ShareSession]:
        """ShareSessionCache's ClientConnectionDisconnectListener: the sessions this connection opened
        and that are still its own (not replaced by a session opened elsewhere) end; the caller releases
        their members' records (onMemberLeave)."""
        ended = []
        for key in self._by_connection.pop(connection_id, ()):
            session = self._sessions.get(key)
            if session is not None and session.connection_id == connection_id:
                del self._sessions[key]
                ended.append(session)
        return ended

    def new_context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        requested: Iterable[TopicPartition],
        forgotten: Iterable[TopicPartition],
        acknowledging: bool,
        connection_id: int = 0,
    ) -> ShareContext | ErrorCode:
        """SharePartitionManager.newContext: the context of a ShareFetch, or the error that refuses it."""
        if epoch == FINAL_EPOCH:
            session = self.get(group_id, member_id)
            if session is None:
                return ErrorCode.SHARE_SESSION_NOT_FOUND
            return ShareContext(session, full=False, final=True)
        if epoch == INITIAL_EPOCH:
            if acknowledging:  # nothing can have been acquired in a session that does not exist yet
                return ErrorCode.INVALID_REQUEST
            self.remove(group_id, member_id)
            if len(self._sessions) >= self.max_sessions:
                return ErrorCode.SHARE_SESSION_LIMIT_REACHED
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), connection_id)
            session.update(requested, ())
            self._sessions[(group_id, member_id)] = session
            self._by_connection.setdefault(connection_id, set()).add((group_id, member_id))
            return ShareContext(session, full=True, final=False)
        session = self.get(group_id, member_id)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND
        if session.epoch != epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session.update(requested, forgotten)
        session.epoch = next_epoch(session.epoch)
        return ShareContext(session, full=False, final=False)

    def acknowledge_update(self, group_id: str, member_id: str, epoch: int) -> ShareSession | ErrorCode:
        """SharePartitionManager.acknowledgeSessionUpdate: a ShareAcknowledge moves the session's epoch
        on (epoch 0 cannot acknowledge; -1 leaves it for the caller to close once acknowledged)."""
        if epoch == INITIAL_EPOCH:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session = self.get(group_id, member_id)
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch == FINAL_EPOCH:
            return session
        if session.epoch != epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session.epoch = next_epoch(session.epoch)
        return session
