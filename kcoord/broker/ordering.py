"""Kafka's per-connection guarantee: a request observes the effects of every earlier request on its
connection.

Kafka reads one request of a connection at a time: `SocketServer.Processor.processCompletedReceives`
mutes the channel once a request is received, and it is unmuted only when that request's response has
been sent (`processCompletedSends`; a request without a response, Produce with acks=0, unmutes when its
handler is done, `RequestChannel.NoOpResponse`). So every request runs after the previous one on its
connection has taken effect and been answered.

kcoord reads ahead (pipelined requests are decoded at once and answered in one write, connection.py)
but starts a request's handler only when the client could not tell it from Kafka's order. The rule,
decided from what each handler does:

- a *read-only* request (the APIs of `READ_ONLY`: they change nothing a later request or another
  client can see) starts once no earlier request that may change state is still unanswered; reads
  after reads overlap, as if each had been served at the moment it was received;
- a Produce or an OffsetCommit (`COMMUTING`) starts once every earlier request still unanswered is of
  its own API: each one's checks and answer depend on nothing an earlier one of its kind changes that
  is not already in place when it starts (a partition's appends and a group's offset writes are issued
  in arrival order, and the producer state, the offsets and the log keep that order), so a client
  cannot tell them from Kafka's one-at-a-time; they keep what the durable log's group commit gives
  pipelining clients (librdkafka keeps 5 Produces in flight per connection; the commits benchmark 64);
- every other request starts only once every earlier request on the connection is answered
  (a parked read, a Fetch waiting for data, must not see a write sent after it);
- nothing overtakes a request that waits, so starts keep the arrival order.

"Answered" is the handler's `respond` call: our handlers answer once their effect is applied (the
coordinators' write path applies, then answers; DeleteRecords answers once the log start has moved).
A connection with one request at a time (a consumer's heartbeats and commits) starts each at once:
the whole cost is two counters and a check of an empty deque. The handlers' effects that Kafka itself
completes after the answer stay that way: EndTxn is answered once its Prepare record is durable and the
markers follow (`TransactionCoordinator.endTransaction`, "we can respond to the client immediately and
continue to write the txn markers"), so a read_committed read right after it may not see them yet, in
Kafka as here.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Final

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext

__all__ = [
    "COMMUTING",
    "METADATA",
    "READ",
    "READ_ONLY",
    "WRITE",
    "RequestOrder",
    "metadata_reads_only",
    "request_kind",
]

# The APIs whose handlers change no state: Fetch (fetch sessions are declined, apis/fetch.py),
# ListOffsets, OffsetFetch, FindCoordinator, DescribeGroups, ListGroups, DescribeAcls, DescribeConfigs,
# DescribeLogDirs, ListPartitionReassignments, DescribeUserScramCredentials, DescribeCluster,
# DescribeProducers, DescribeTransactions, ListTransactions, ConsumerGroupDescribe, OffsetForLeaderEpoch,
# DescribeQuorum, ListConfigResources, DescribeTopicPartitions, ShareGroupDescribe,
# DescribeShareGroupOffsets. Metadata is read-only
# unless it may auto-create topics (`metadata_reads_only`). Any API not named here counts as a write: a
# new API is ordered like Kafka until someone shows it changes nothing.
READ_ONLY: Final = frozenset(
    {1, 2, 9, 10, 15, 16, 23, 29, 32, 35, 46, 50, 55, 60, 61, 65, 66, 69, 74, 75, 77, 90}
)
METADATA = 3
# Writes that may overlap earlier unanswered writes of the same API on their connection (the rule above):
# Produce and OffsetCommit. Their kind is their API key.
COMMUTING: Final = frozenset({0, 8})
PRODUCE = 0
# The kind of a request as RequestOrder counts it: READ, WRITE, or the API key of a COMMUTING write.
READ: Final = -1
WRITE: Final = -2

Run = Callable[[Handler, Request, RequestMeta, Respond], None]


def metadata_reads_only(ctx: ServerContext, version: int, body: Request) -> bool:
    """apis/metadata.py creates the missing topics it names when auto-creation is allowed: only a
    Metadata request that cannot do so is read-only (all topics, none, or creation off)."""
    allowed = version < 4 or bool(body["allow_auto_topic_creation"])
    return not (allowed and ctx.config.auto_create_topics and body["topics"])


_KINDS: Final = {**{key: READ for key in READ_ONLY}, **{key: key for key in COMMUTING}}


def request_kind(ctx: ServerContext, api_key: int, version: int, body: Request) -> int:
    """READ, the API key of a COMMUTING write, or WRITE (every request pays this: one dict lookup)."""
    if api_key == METADATA:
        return READ if metadata_reads_only(ctx, version, body) else WRITE
    return _KINDS.get(api_key, WRITE)


class RequestOrder:
    """One connection's started-but-unanswered requests and the received ones waiting to start.

    `run` calls a handler (the connection's, which closes the connection if the handler raises).
    When a request finishes while others wait, `on_turn` (the connection's, which calls `resume`) runs
    on the next loop turn, never inside the `respond` that finished it: a respond may run inside the
    group logic or inside another connection's handler. A request's kind is READ, WRITE or the API key
    of a COMMUTING write.
    """

    __slots__ = (
        "_on_turn", "_open", "_open_key", "_open_same", "_open_writes", "_run", "_turn_scheduled", "_waiting",
    )  # fmt: skip

    def __init__(self, run: Run, on_turn: Callable[[], None]) -> None:
        self._run = run
        self._on_turn = on_turn
        self._turn_scheduled = False
        self._open = 0  # started, not yet answered
        self._open_writes = 0  # of those, the ones that may change state
        self._open_key = WRITE  # the COMMUTING API of the open writes counted by _open_same
        self._open_same = 0  # open requests of kind _open_key
        self._waiting: collections.deque[tuple[Handler, Request, RequestMeta, Respond, int]] = (
            collections.deque()
        )

    def _may_start(self, kind: int) -> bool:
        if kind == READ:
            return not self._open_writes
        if not self._open:
            return True
        return kind >= 0 and kind == self._open_key and self._open == self._open_same

    def _start(self, kind: int) -> None:
        if kind >= 0:
            if self._open_same and kind == self._open_key:
                self._open_same += 1
            elif not self._open:
                self._open_key, self._open_same = kind, 1
        self._open += 1
        if kind != READ:
            self._open_writes += 1

    def admit(self, handler: Handler, body: Request, meta: RequestMeta, respond: Respond, kind: int) -> bool:
        """A decoded request whose response slot is already queued: True if it starts now (the caller
        runs it, counted as started), False if it waits for its turn (`resume` runs it)."""
        if not self._open and not self._waiting:  # the usual case (one at a time, or answered at once)
            self._open = 1
            if kind != READ:
                self._open_writes = 1
                if kind >= 0:
                    self._open_key, self._open_same = kind, 1
            return True
        if self._waiting or not self._may_start(kind):
            self._waiting.append((handler, body, meta, respond, kind))
            return False
        self._start(kind)
        return True

    def finished(self, kind: int) -> None:
        """A started request was answered (its effect is in place)."""
        self._open -= 1
        if kind != READ:
            self._open_writes -= 1
            if kind == self._open_key and self._open_same:
                self._open_same -= 1
        if self._waiting and not self._turn_scheduled:
            self._turn_scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        try:
            self._on_turn()
        finally:  # requests finishing inside the turn are seen by resume's own loop
            self._turn_scheduled = False

    def finished_silently(self, body: dict[str, object]) -> None:
        """The `respond` of a request that gets no response (Produce acks=0, the only one): finished."""
        self.finished(PRODUCE)

    def resume(self) -> None:
        """Start the waiting requests whose turn has come, in arrival order."""
        waiting = self._waiting
        while waiting:
            kind = waiting[0][4]
            if not self._may_start(kind):
                return
            handler, body, meta, respond, _ = waiting.popleft()
            self._start(kind)
            self._run(handler, body, meta, respond)

    @property
    def waiting(self) -> int:
        """Requests received and not started yet."""
        return len(self._waiting)

    def clear(self) -> None:
        """The connection closed: nothing waiting will start."""
        self._waiting.clear()
