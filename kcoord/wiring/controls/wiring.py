"""The test controls' place on the request path: `ControlsLayer`, the outermost middleware (layer
TEST_CONTROLS of kcoord/broker/middleware.py), around every API's handler (only with
`--enable-test-controls`; otherwise the composition root passes no such layer and nothing here runs).

The wrapper records the request in the request log, then applies the first armed fault it matches:
`error` answers the API's error shape instead of running the handler (or, limited to some partitions,
serves the rest and adds their errors), `delay` runs the request that much later, `disconnect` closes
the connection without answering.

Each entry says where its request is (`state`), so a report can show what a test left unanswered:
"delayed" (a delay fault or latency holds it back from its handler), "in flight" (handed to its
handler, no answer yet: its write on the way to durable), "parked" (see PARKING_APIS), "answered"
(with `duration_ms`), "dropped" (a disconnect fault closed its connection: it is never answered).
An entry not answered yet also carries `waited_ms`, how long it has waited so far when read.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.faults import error_body, merge, split
from kcoord.broker.middleware import Layer
from kcoord.wiring.controls.faults import FaultTable, Match
from kcoord.wiring.controls.names import api_name

__all__ = ["PARKING_APIS", "REQUEST_LOG_SIZE", "ControlsLayer", "RequestLog"]

log = logging.getLogger("kcoord.controls")

REQUEST_LOG_SIZE = 10_000
# The APIs whose handler holds a request until an event rather than a write, as Kafka's purgatories do:
# Fetch until data or max_wait_ms (DelayedFetch), JoinGroup until the rebalance completes (the classic
# group's pending join), SyncGroup until the leader's assignment. Unanswered once their handler
# returned, they are "parked"; for a moment that may be their write instead, which no report tells apart.
PARKING_APIS = frozenset({1, 11, 14})
_RECEIVED = "_received"  # perf_counter() at receipt: waited_ms for entries not yet answered


class RequestLog:
    """The last REQUEST_LOG_SIZE requests, each a JSON-able entry (fixtures.md's request-log entry)."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._entries: collections.deque[dict[str, Any]] = collections.deque(maxlen=REQUEST_LOG_SIZE)
        self._seq = itertools.count(1)

    def begin(self, api_key: int, meta: RequestMeta, respond: Respond) -> dict[str, Any]:
        slot = getattr(respond, "__self__", None)  # the connection's response slot (None: acks=0)
        conn = getattr(slot, "conn", None)
        entry: dict[str, Any] = {
            "seq": next(self._seq),
            "at_ms": self._now_ms(),
            "api": api_name(api_key),
            "api_key": api_key,
            "api_version": meta.api_version,
            "correlation_id": getattr(slot, "correlation_id", None),
            "client_id": meta.client_id,
            "peer": None if conn is None else conn.peer,
            "duration_ms": None,
            "error_codes": [],
            "fault": None,
            "state": "in flight",
            _RECEIVED: time.perf_counter(),
        }
        self._entries.append(entry)
        return entry

    def since(self, seq: int) -> list[dict[str, Any]]:
        now = time.perf_counter()
        return [_view(e, now) for e in self._entries if e["seq"] > seq]

    def clear(self) -> None:
        self._entries.clear()
        self._seq = itertools.count(1)


def _view(entry: dict[str, Any], now: float) -> dict[str, Any]:
    """The JSON of an entry: without its receipt time, with `waited_ms` while it is not answered."""
    view = {k: v for k, v in entry.items() if k != _RECEIVED}
    if entry["duration_ms"] is None:
        view["waited_ms"] = round((now - entry[_RECEIVED]) * 1000, 3)
    return view


def _error_codes(body: object, found: set[int]) -> None:
    if isinstance(body, dict):
        for key, value in body.items():
            if isinstance(value, int) and key.endswith("error_code"):
                if value:
                    found.add(value)
            elif isinstance(value, list | dict):
                _error_codes(value, found)
    elif isinstance(body, list):
        for item in body:
            if isinstance(item, list | dict):
                _error_codes(item, found)


def _logged(entry: dict[str, Any], respond: Respond) -> Respond:
    started = entry[_RECEIVED]

    def answered(body: dict[str, object]) -> None:
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        entry["state"] = "answered"
        found: set[int] = set()
        _error_codes(body, found)
        entry["error_codes"] = sorted(found)
        respond(body)

    return answered


class ControlsLayer:
    """Records every request in `requests`, then applies the first armed fault of `faults` it matches."""

    layer = Layer.TEST_CONTROLS

    def __init__(self, faults: FaultTable, requests: RequestLog) -> None:
        self._faults = faults
        self._requests = requests

    def wrap(self, api_key: int, inner: Handler) -> Handler:
        # Built at startup, on the loop that serves: delays are scheduled on it
        return _wrapper(api_key, inner, self._faults, self._requests, asyncio.get_running_loop())


def _wrapper(
    api_key: int, plain: Handler, faults: FaultTable, requests: RequestLog, loop: asyncio.AbstractEventLoop
) -> Handler:
    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        entry = requests.begin(api_key, meta, respond)
        original, respond = respond, _logged(entry, respond)
        match = faults.take(api_key, meta.api_version, req, ctx.topics.name_for_id) if faults.armed else None
        delay_ms = faults.latency_ms.get(api_key, 0)
        if match is None:
            run: Callable[[], None] = lambda: plain(ctx, req, meta, respond)  # noqa: E731
        else:
            fault = match.fault
            entry["fault"] = fault.id
            log.info("test control: fault %d (%s) on %s", fault.id, fault.kind, api_name(api_key))
            if fault.kind == "disconnect":
                entry["state"] = "dropped"
                _disconnect(original)
                return
            if fault.kind == "delay":
                delay_ms += fault.ms or 0
                run = lambda: plain(ctx, req, meta, respond)  # noqa: E731
            else:
                run = _failing(api_key, plain, ctx, req, meta, respond, match)
        if delay_ms:
            entry["state"] = "delayed"
            loop.call_later(delay_ms / 1000, _handed, entry, api_key, run)
        else:
            _handed(entry, api_key, run)

    return handle


def _handed(entry: dict[str, Any], api_key: int, run: Callable[[], None]) -> None:
    """Hand the request to its handler; still unanswered when it returns, a parking API's is parked."""
    entry["state"] = "in flight"
    run()
    if entry["state"] == "in flight" and api_key in PARKING_APIS:
        entry["state"] = "parked"


def _failing(
    api_key: int,
    plain: Handler,
    ctx: ServerContext,
    req: Request,
    meta: RequestMeta,
    respond: Respond,
    match: Match,
) -> Callable[[], None]:
    assert match.fault.error is not None
    code, version = int(match.fault.error), meta.api_version
    if match.failed is None:
        return lambda: respond(error_body(api_key, version, req, code))
    rest, failed = split(api_key, version, req, match.failed, ctx.topics.name_for_id)

    def served(body: dict[str, object]) -> None:
        respond(merge(api_key, version, body, failed, code))

    return lambda: plain(ctx, rest, meta, served)


def _disconnect(respond: Respond) -> None:
    """Close the request's connection without answering it (Produce acks=0 has no slot: no answer
    either way, the connection stays)."""
    conn = getattr(getattr(respond, "__self__", None), "conn", None)
    if conn is not None:
        conn.abort("test control: disconnect fault")
