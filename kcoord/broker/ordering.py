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

__all__ = ["METADATA", "READ_ONLY", "RequestOrder", "metadata_reads_only"]

# The APIs whose handlers change no state: Fetch (fetch sessions are declined, apis/fetch.py),
# ListOffsets, OffsetFetch, FindCoordinator, DescribeGroups, ListGroups, DescribeAcls, DescribeConfigs,
# DescribeLogDirs, ListPartitionReassignments, DescribeUserScramCredentials, DescribeCluster,
# DescribeProducers, DescribeTransactions, ListTransactions, ConsumerGroupDescribe. Metadata is read-only
# unless it may auto-create topics (`metadata_reads_only`). Any API not named here counts as a write: a
# new API is ordered like Kafka until someone shows it changes nothing.
READ_ONLY: Final = frozenset({1, 2, 9, 10, 15, 16, 29, 32, 35, 46, 50, 60, 61, 65, 66, 69})
METADATA = 3

Run = Callable[[Handler, Request, RequestMeta, Respond], None]


def metadata_reads_only(ctx: ServerContext, version: int, body: Request) -> bool:
    """apis/metadata.py creates the missing topics it names when auto-creation is allowed: only a
    Metadata request that cannot do so is read-only (all topics, none, or creation off)."""
    allowed = version < 4 or bool(body["allow_auto_topic_creation"])
    return not (allowed and ctx.config.auto_create_topics and body["topics"])


class RequestOrder:
    """One connection's started-but-unanswered requests and the received ones waiting to start.

    `run` calls a handler (the connection's, which closes the connection if the handler raises).
    When a request finishes while others wait, `on_turn` (the connection's, which calls `resume`) runs
    on the next loop turn, never inside the `respond` that finished it: a respond may run inside the
    group logic or inside another connection's handler.
    """

    __slots__ = ("_on_turn", "_open", "_open_writes", "_run", "_turn_scheduled", "_waiting")

    def __init__(self, run: Run, on_turn: Callable[[], None]) -> None:
        self._run = run
        self._on_turn = on_turn
        self._turn_scheduled = False
        self._open = 0  # started, not yet answered
        self._open_writes = 0  # of those, the ones that may change state
        self._waiting: collections.deque[tuple[Handler, Request, RequestMeta, Respond, bool]] = (
            collections.deque()
        )

    def admit(self, handler: Handler, body: Request, meta: RequestMeta, respond: Respond, ro: bool) -> bool:
        """A decoded request whose response slot is already queued: True if it starts now (the caller
        runs it, counted as started), False if it waits for its turn (`resume` runs it)."""
        if self._waiting or (self._open_writes if ro else self._open):
            self._waiting.append((handler, body, meta, respond, ro))
            return False
        self._open += 1
        if not ro:
            self._open_writes += 1
        return True

    def finished(self, ro: bool) -> None:
        """A started request was answered (its effect is in place)."""
        self._open -= 1
        if not ro:
            self._open_writes -= 1
        if self._waiting and not self._turn_scheduled:
            self._turn_scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        try:
            self._on_turn()
        finally:  # requests finishing inside the turn are seen by resume's own loop
            self._turn_scheduled = False

    def finished_silently(self, body: dict[str, object]) -> None:
        """The `respond` of a request that gets no response (Produce acks=0): a write, finished."""
        self.finished(False)

    def resume(self) -> None:
        """Start the waiting requests whose turn has come, in arrival order."""
        waiting = self._waiting
        while waiting:
            ro = waiting[0][4]
            if self._open_writes if ro else self._open:
                return
            handler, body, meta, respond, _ = waiting.popleft()
            self._open += 1
            if not ro:
                self._open_writes += 1
            self._run(handler, body, meta, respond)

    @property
    def waiting(self) -> int:
        """Requests received and not started yet."""
        return len(self._waiting)

    def clear(self) -> None:
        """The connection closed: nothing waiting will start."""
        self._waiting.clear()
