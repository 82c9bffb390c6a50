"""The HTTP routes of the test controls (`/v1/test/...`, with --http-listen and --enable-test-controls):
each calls one `TestControls` method and answers its JSON (bytes as base64 strings). The older routes
(`/v1/test/errors`, `/v1/test/latency`, `/v1/test/config`, rebalance and expiry) stay in http.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kcoord.wiring.controls.names import ControlError
from kcoord.wiring.controls.surface import TestControls

__all__ = ["LEGACY_ERROR_APIS", "json_body", "test_routes"]

# `/v1/test/errors` has always taken the group coordinator's APIs only; `/v1/test/faults` takes all.
LEGACY_ERROR_APIS = frozenset({8, 9, 10, 11, 12, 13, 14, 15, 16, 42})

Controls = Callable[[], TestControls]
Route = Callable[[web.Request], Awaitable[web.Response]]


def test_routes(controls: Controls) -> list[web.RouteDef]:
    def route(call: Callable[[TestControls, web.Request], Awaitable[Any]], status: int = 200) -> Route:
        async def handle(request: web.Request) -> web.Response:
            return web.json_response(_jsonable(await call(controls(), request)), status=status)

        return handle

    return [
        web.post("/v1/test/reset", route(lambda c, r: c.reset())),
        web.post("/v1/test/advance", route(_advance)),
        web.post("/v1/test/topics", route(_create_topic, 201)),
        web.get("/v1/test/topics/{topic}/records", route(lambda c, r: c.records(r.match_info["topic"]))),
        web.get("/v1/test/groups/{group}/committed", route(lambda c, r: c.committed(r.match_info["group"]))),
        web.get("/v1/test/groups/{group}", route(lambda c, r: c.group(r.match_info["group"]))),
        web.get("/v1/test/share-groups/{group}/partitions/{topic}/{partition}", route(_share_partition)),
        web.post("/v1/test/share-groups/expire-locks", route(_expire_share_locks)),
        web.post("/v1/test/faults", route(_add_fault, 201)),
        web.get("/v1/test/faults", route(lambda c, r: c.faults())),
        web.delete("/v1/test/faults", route(lambda c, r: c.clear_faults())),
        web.get("/v1/test/faults/fired", route(lambda c, r: c.fired())),
        web.get("/v1/test/requests", route(_requests)),
    ]


async def _advance(controls: TestControls, request: web.Request) -> Any:
    body = await json_body(request)
    return await controls.advance(body.get("seconds"))  # type: ignore[arg-type]  # checked there


async def _create_topic(controls: TestControls, request: web.Request) -> Any:
    body = await json_body(request)
    config = body.get("config")
    if config is not None and not isinstance(config, dict):
        raise ControlError(400, "config must be an object of topic configs")
    return await controls.create_topic(body.get("name"), body.get("partitions", 1), config)  # type: ignore[arg-type]


async def _share_partition(controls: TestControls, request: web.Request) -> Any:
    partition = request.match_info["partition"]
    if not partition.isdigit():
        raise ControlError(400, f"partition must be a non-negative integer, got {partition!r}")
    return await controls.share_partition(
        request.match_info["group"], request.match_info["topic"], int(partition)
    )


async def _expire_share_locks(controls: TestControls, request: web.Request) -> Any:
    body = await json_body(request) if request.can_read_body else {}
    return await controls.expire_share_locks(body.get("group"))


_FAULT_ARGS = {
    "error": ("api", "error", "count", "topic", "partition", "group"),
    "delay": ("api", "ms", "count"),
    "disconnect": ("api", "count"),
}


async def _add_fault(controls: TestControls, request: web.Request) -> Any:
    body = await json_body(request)
    kind = body.pop("kind", "error")
    if kind not in _FAULT_ARGS:
        raise ControlError(400, f"kind must be one of {sorted(_FAULT_ARGS)}, got {kind!r}")
    unknown = sorted(set(body) - set(_FAULT_ARGS[kind]))
    if unknown:
        raise ControlError(400, f"a {kind} fault takes {list(_FAULT_ARGS[kind])}, not {unknown}")
    if "api" not in body:
        raise ControlError(400, "api is required")
    methods: dict[str, Callable[..., Awaitable[Any]]] = {
        "error": controls.fail,
        "delay": controls.delay,
        "disconnect": controls.disconnect,
    }
    method = methods[kind]
    try:
        return await method(**body)
    except TypeError as exc:  # a required argument left out (error, ms)
        raise ControlError(400, str(exc)) from None


async def _requests(controls: TestControls, request: web.Request) -> Any:
    since = request.query.get("since", "0")
    if not since.isdigit():
        raise ControlError(400, f"since must be a non-negative integer, got {since!r}")
    return await controls.requests(int(since))


def _jsonable(value: Any) -> Any:
    """bytes -> base64 strings, recursively."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ControlError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ControlError(400, "the body must be a JSON object")
    return body
