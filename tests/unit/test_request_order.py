"""The ordering rule of one connection (kcoord/broker/ordering.py), driven request by request: which
received requests start at once and which wait for an earlier one to be answered. The wire tests
(tests/server/test_connection_order.py) show what a client sees; this shows what no client can: reads
overlapping reads."""

from __future__ import annotations

import asyncio

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.ordering import RequestOrder

META = RequestMeta(0, "order-test", "/127.0.0.1")


def _handler(ctx: ServerContext, body: Request, meta: RequestMeta, respond: Respond) -> None:
    raise AssertionError("the connection runs the handlers; RequestOrder only says when")


class Connection:
    """What the connection does with RequestOrder: run what it admits, resume on its turn."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.order = RequestOrder(self._run, lambda: self.order.resume())
        self.kinds: dict[str, bool] = {}

    def _run(self, handler: object, body: Request, meta: RequestMeta, respond: Respond) -> None:
        self.started.append(body["name"])

    def receive(self, name: str, read_only: bool) -> None:
        self.kinds[name] = read_only
        if self.order.admit(_handler, {"name": name}, META, lambda body: None, read_only):
            self.started.append(name)

    async def answer(self, name: str) -> None:
        """`name` is answered; what waited behind it starts on the next loop turn."""
        self.order.finished(self.kinds[name])
        await asyncio.sleep(0)  # one loop turn: the scheduled resume runs


async def test_reads_overlap_reads_but_not_an_unanswered_write() -> None:
    conn = Connection()
    for name, read_only in (("fetch", True), ("list", True), ("commit", False), ("offsets", True)):
        conn.receive(name, read_only)
    assert conn.started == ["fetch", "list"]  # the write waits for both reads, the read after it waits too
    await conn.answer("list")
    assert conn.started == ["fetch", "list"]
    await conn.answer("fetch")
    assert conn.started == ["fetch", "list", "commit"]
    await conn.answer("commit")
    assert conn.started == ["fetch", "list", "commit", "offsets"]
    assert conn.order.waiting == 0


async def test_nothing_overtakes_a_waiting_request() -> None:
    conn = Connection()
    for name, read_only in (("produce", False), ("fetch", True), ("heartbeat", False), ("describe", True)):
        conn.receive(name, read_only)
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
        conn.receive(f"heartbeat-{i}", False)
        await conn.answer(f"heartbeat-{i}")  # a heartbeat is answered inside its handler
    assert conn.started == ["heartbeat-0", "heartbeat-1", "heartbeat-2"]
    assert conn.order.waiting == 0


async def test_a_cleared_order_starts_nothing_more() -> None:
    conn = Connection()
    conn.receive("commit", False)
    conn.receive("offsets", True)
    conn.order.clear()  # the connection closed
    await conn.answer("commit")
    assert conn.started == ["commit"]
