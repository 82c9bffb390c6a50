"""Injected errors and latency for the group coordinator's APIs (test controls only).

`Faults` owns the connection's handler table (`ServerContext.handlers`): while an API has an injected
error or latency, its entry is a wrapper; otherwise the plain handler is back in place, so the request
path costs nothing when no fault is set. An injected error is answered instead of running the handler
(the group logic never sees the request), shaped as the API's own error answer for that version.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kcoord.coordinator.groups.responses import join_error, sync_error
from kcoord.coordinator.server.apis.heartbeat import heartbeat_response
from kcoord.coordinator.server.apis.join_group import join_body
from kcoord.coordinator.server.apis.leave_group import leave_response
from kcoord.coordinator.server.apis.sync_group import sync_body
from kcoord.coordinator.server.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = ["ERROR_APIS", "Fault", "Faults", "request_groups"]

log = logging.getLogger("kcoord.faults")

Body = dict[str, Any]


def _find_coordinator(version: int, req: Request, code: int) -> Body:
    if version < 4:
        return {"error_code": code, "node_id": -1, "host": "", "port": -1}
    keys = req.get("coordinator_keys") or []
    return {
        "coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code} for k in keys]
    }


def _offset_commit(version: int, req: Request, code: int) -> Body:
    topics = [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                           for p in t["partitions"]]}
        for t in req.get("topics") or []
    ]  # fmt: skip
    return {"topics": topics}


def _offset_fetch(version: int, req: Request, code: int) -> Body:
    if version >= 8:
        return {"groups": [{"group_id": g["group_id"], "error_code": code} for g in req.get("groups") or []]}
    if version >= 2:
        return {"error_code": code, "topics": []}
    topics = [
        {"name": t["name"], "partitions": [{"partition_index": p, "committed_offset": -1, "metadata": "",
                                            "error_code": code} for p in t["partition_indexes"]]}
        for t in req.get("topics") or []
    ]  # fmt: skip
    return {"topics": topics}


def _describe(version: int, req: Request, code: int) -> Body:
    return {"groups": [{"group_id": g, "error_code": code} for g in req.get("groups") or []]}


def _delete(version: int, req: Request, code: int) -> Body:
    return {"results": [{"group_id": g, "error_code": code} for g in req.get("groups_names") or []]}


def _partition_errors(req: Request, code: int) -> list[Body]:
    """TxnOffsetCommit's and OffsetDelete's per-partition answer: every partition gets `code`."""
    out = []
    for t in req.get("topics") or []:
        parts = [p["partition_index"] if isinstance(p, dict) else p for p in t.get("partitions") or []]
        out.append(
            {"name": t["name"], "partitions": [{"partition_index": i, "error_code": code} for i in parts]}
        )
    return out


def _consumer_group_describe(version: int, req: Request, code: int) -> Body:
    groups = req.get("group_ids") or []
    blank = {"group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}
    return {"groups": [{"group_id": g, "error_code": code, **blank} for g in groups]}


ErrorBody = Callable[[int, Request, int], Body]
# The coordinator's APIs, by key: the error answer of a request at a version.
ERROR_APIS: dict[int, ErrorBody] = {
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    11: lambda version, req, code: join_body(
        version, join_error(ErrorCode(code), str(req.get("member_id") or ""))
    ),
    12: lambda version, req, code: heartbeat_response(ErrorCode(code)),
    13: lambda version, req, code: leave_response(version, ErrorCode(code)),
    14: lambda version, req, code: sync_body(version, sync_error(ErrorCode(code))),
    15: _describe,
    16: lambda version, req, code: {"error_code": code, "groups": []},
    42: _delete,
    # Added for cluster mode's routing (NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS at the edge):
    # the transaction coordinator's APIs and the group APIs the table above did not have.
    22: lambda version, req, code: {"error_code": code, "producer_id": -1, "producer_epoch": -1},
    25: lambda version, req, code: {"error_code": code},
    26: lambda version, req, code: {"error_code": code, "producer_id": -1, "producer_epoch": -1},
    28: lambda version, req, code: {"topics": _partition_errors(req, code)},
    47: lambda version, req, code: {"error_code": code, "topics": []},
    68: lambda version, req, code: {
        "error_code": code,
        "member_id": None,
        "member_epoch": -1,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    },
    69: _consumer_group_describe,
}


def request_groups(api_key: int, req: Request) -> list[str]:
    """The groups a request is about (FindCoordinator: only group keys)."""
    if api_key == 10:
        if req.get("key_type", 0) != 0:
            return []
        return list(req.get("coordinator_keys") or []) or [str(req.get("key") or "")]
    if api_key == 9 and "groups" in req:
        return [g["group_id"] for g in req["groups"] or []]
    if api_key == 15:
        return list(req.get("groups") or [])
    if api_key == 42:
        return list(req.get("groups_names") or [])
    return [str(req.get("group_id") or "")]


@dataclass(slots=True)
class Fault:
    id: int
    api_key: int
    error: ErrorCode
    remaining: int
    group_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "api_key": self.api_key,
            "error": self.error.name,
            "error_code": int(self.error),
            "remaining": self.remaining,
            "group_id": self.group_id,
        }


class Faults:
    """The injected errors (first in, first used) and latencies, per API key."""

    def __init__(self, ctx: ServerContext, loop: asyncio.AbstractEventLoop) -> None:
        self._ctx = ctx
        self._loop = loop
        self._plain = dict(ctx.handlers)
        self._ids = itertools.count(1)
        self.errors: list[Fault] = []
        self.latency_ms: dict[int, int] = {}

    def add_error(self, api_key: int, error: ErrorCode, count: int, group_id: str | None) -> Fault:
        fault = Fault(next(self._ids), api_key, error, count, group_id)
        self.errors.append(fault)
        self._rewire(api_key)
        log.info("test control: the next %d %s requests answer %s", count, api_key, error.name)
        return fault

    def set_latency(self, api_key: int, ms: int) -> None:
        if ms > 0:
            self.latency_ms[api_key] = ms
        else:
            self.latency_ms.pop(api_key, None)
        self._rewire(api_key)

    def clear(self) -> None:
        keys = {f.api_key for f in self.errors} | set(self.latency_ms)
        self.errors.clear()
        self.latency_ms.clear()
        for key in keys:
            self._rewire(key)

    def _rewire(self, api_key: int) -> None:
        plain = self._plain[api_key]
        active = api_key in self.latency_ms or any(f.api_key == api_key for f in self.errors)
        self._ctx.handlers[api_key] = self._wrap(api_key, plain) if active else plain

    def _wrap(self, api_key: int, plain: Handler) -> Handler:
        def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
            fault = self._take(api_key, req)
            delay_ms = self.latency_ms.get(api_key, 0)
            if fault is not None:
                body = ERROR_APIS[api_key](meta.api_version, req, int(fault.error))
                run: Callable[[], None] = lambda: respond(body)  # noqa: E731
            else:
                run = lambda: plain(ctx, req, meta, respond)  # noqa: E731
            if delay_ms:
                self._loop.call_later(delay_ms / 1000, run)
            else:
                run()

        return handle

    def _take(self, api_key: int, req: Request) -> Fault | None:
        for fault in self.errors:
            if fault.api_key != api_key:
                continue
            if fault.group_id is not None and fault.group_id not in request_groups(api_key, req):
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self.errors.remove(fault)
                self._rewire(api_key)
            return fault
        return None
