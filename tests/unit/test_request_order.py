"""The ordering rule of one connection (kcoord/broker/ordering.py), driven request by request: which
received requests start at once and which wait for an earlier one to be answered. The wire tests
(tests/server/test_connection_order.py) show what a client sees; this shows what no client can: reads
overlapping reads, and writes of one commuting API overlapping each other."""

from __future__ import annotations

import asyncio

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.ordering import READ, WRITE, RequestOrder

PRODUCE, OFFSET_COMMIT = 0, 8  # the COMMUTING writes: their kind is their API key
META = RequestMeta(0, "order-test", "/127.0.0.1")


def _handler(ctx: ServerContext, body: Request, meta: RequestMeta, respond: Respond) -> None:
    raise AssertionError("the connection runs the handlers; RequestOrder only says when")


class Connection:
    """What the connection does with RequestOrder: run what it admits, resume on its turn."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.order = RequestOrder(self._run, lambda: self.order.resume())
        self.kinds: dict[str, int] = {}

    def _run(self, handler: object, body: Request, meta: RequestMeta, respond: Respond) -> None:
        self.started.append(body["name"])

    def receive(self, name: str, kind: int) -> None:
        self.kinds[name] = kind
        if self.order.admit(_handler, {"name": name}, META, lambda body: None, kind):
            self.started.append(name)

    async def answer(self, name: str) -> None:
        """`name` is answered; what waited behind it starts on the next loop turn."""
        self.order.finished(self.kinds[name])
        await asyncio.sleep(0)  # one loop turn: the scheduled resume runs


async def test_reads_overlap_reads_but_not_an_unanswered_write() -> None:
    conn = Connection()
    for name, kind in (("fetch", READ), ("list", READ), ("alter", WRITE), ("offsets", READ)):
        conn.receive(name, kind)
    assert conn.started == ["fetch", "list"]  # the write waits for both reads, the read after it waits too
    await conn.answer("list")
    assert conn.started == ["fetch", "list"]
    await conn.answer("fetch")
    assert conn.started == ["fetch", "list", "alter"]
    await conn.answer("alter")
    assert conn.started == ["fetch", "list", "alter", "offsets"]
    assert conn.order.waiting == 0


async def test_nothing_overtakes_a_waiting_request() -> None:
    conn = Connection()
    for name, kind in (("produce", PRODUCE), ("fetch", READ), ("heartbeat", WRITE), ("describe", READ)):
        conn.receive(name, kind)
    assert conn.started == ["produce"]
    await conn.answer("produce")
    assert conn.started == ["produce", "fetch"]  # the heartbeat waits for the fetch, the describe for it
    await conn.answer("fetch")
    assert conn.started == ["produce", "fetch", "heartbeat"]
    await conn.answer("heartbeat")
    assert conn.started == ["produce", "fetch", "heartbeat", "describe"]


async def test_requests_answered_at_once_never_wait() -> None:
    conn = Connection()
    for i in range(3):
        conn.receive(f"heartbeat-{i}", WRITE)
        await conn.answer(f"heartbeat-{i}")  # a heartbeat is answered inside its handler
    assert conn.started == ["heartbeat-0", "heartbeat-1", "heartbeat-2"]
    assert conn.order.waiting == 0


async def test_a_cleared_order_starts_nothing_more() -> None:
    conn = Connection()
    conn.receive("commit", OFFSET_COMMIT)
    conn.receive("offsets", READ)
    conn.order.clear()  # the connection closed
    await conn.answer("commit")
    assert conn.started == ["commit"]


async def test_writes_of_one_commuting_api_overlap_and_nothing_else_joins_them() -> None:
    conn = Connection()
    for name, kind in (
        ("produce-1", PRODUCE), ("produce-2", PRODUCE), ("commit", OFFSET_COMMIT), ("produce-3", PRODUCE),
        ("fetch", READ),
    ):  # fmt: skip
        conn.receive(name, kind)
    assert conn.started == ["produce-1", "produce-2"]  # pipelined Produces append in arrival order
    await conn.answer("produce-2")
    assert conn.started == ["produce-1", "produce-2"]  # the commit waits for every Produce before it
    await conn.answer("produce-1")
    assert conn.started == ["produce-1", "produce-2", "commit"]
    await conn.answer("commit")
    assert conn.started == ["produce-1", "produce-2", "commit", "produce-3"]
    await conn.answer("produce-3")
    assert conn.started == ["produce-1", "produce-2", "commit", "produce-3", "fetch"]


async def test_a_commuting_write_waits_for_an_unanswered_read_before_it() -> None:
    conn = Connection()
    conn.receive("fetch", READ)  # a parked Fetch must not see the Produce sent after it
    conn.receive("produce", PRODUCE)
    assert conn.started == ["fetch"]
    await conn.answer("fetch")
    assert conn.started == ["fetch", "produce"]
