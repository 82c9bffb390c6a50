"""The HTTP endpoint (`--http-listen`): /metrics, /healthz, /readyz, /v1/groups, /v1/transactions and the
test controls.

aiohttp serves it on the coordinator's own event loop, so every handler reads the group and transaction
state between two Kafka requests: a consistent snapshot without locks. The test controls (`/v1/test/...`,
only with `--enable-test-controls`, 403 otherwise) call the group manager's transitions, the transaction
coordinator's controls and the fault table; see the README's "HTTP endpoint" section for every route
with a curl example.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from kcoord.coordinator.config import HostPort
from kcoord.coordinator.group_views import all_groups, find_group, group_detail, group_summary
from kcoord.coordinator.groups.controls import TestControlError
from kcoord.coordinator.metrics import API_NAMES, KcoordCollector, MetricsSource
from kcoord.coordinator.server.context import ServerContext
from kcoord.coordinator.server.faults import ERROR_APIS, Faults
from kcoord.coordinator.topics.data import TopicData
from kcoord.coordinator.transactions import ControlResult
from kcoord.coordinator.transactions.results import OnControl
from kcoord.coordinator.txn_metrics import TransactionCollector
from kcoord.coordinator.txn_views import (
    all_transactions,
    control_status,
    parse_states,
    transaction_detail,
    transaction_summary,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["HttpEndpoint", "Observed"]

log = logging.getLogger("kcoord.http")

_API_KEYS = {name.lower(): key for key, name in API_NAMES.items()}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A transaction control answers once its record is durable; a storage write never takes this long.
CONTROL_TIMEOUT_S = 30.0


# Liveness and readiness probes stay open with a bearer token (orchestrators probe without one).
_PROBES = frozenset({"/healthz", "/readyz"})


@dataclass(slots=True)
class Observed:
    """What the endpoint reads: the server context (once bound) and the metrics' counts."""

    ctx: ServerContext
    metrics: MetricsSource
    test_controls: bool
    max_groups: int


class HttpEndpoint:
    def __init__(self, observed: Observed) -> None:
        self._obs = observed
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(KcoordCollector(observed.metrics, observed.max_groups))
        ctx = observed.ctx
        self._registry.register(
            TransactionCollector(
                ctx.transactions, ctx.data.logs.partitions, TopicData.now_ms, observed.max_groups
            )
        )
        self._registry.register(ProcessCollector(registry=None))
        self._faults: Faults | None = None
        self._runner: web.AppRunner | None = None
        self._bearer: bytes | None = None
        self.bound: HostPort | None = None

    async def start(
        self, listen: HostPort, ssl_context: ssl.SSLContext | None = None, bearer_token: str | None = None
    ) -> HostPort:
        """Serve on `listen`; over TLS with `ssl_context`; with `bearer_token`, every path but the
        probes (/healthz, /readyz) needs `Authorization: Bearer <token>` (compared in constant time)."""
        self._bearer = None if not bearer_token else f"Bearer {bearer_token}".encode()
        if self._obs.test_controls:
            self._faults = Faults(self._obs.ctx, asyncio.get_running_loop())
        app = web.Application(middlewares=[self._guard])
        app.add_routes(self._routes())
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, listen.host, listen.port, backlog=128, reuse_address=True, ssl_context=ssl_context
        )
        await site.start()
        port = self._runner.addresses[0][1]
        self.bound = HostPort(listen.host, port)
        log.info(
            "http endpoint on %s:%d test_controls=%s tls=%s bearer_token=%s",
            listen.host,
            port,
            self._obs.test_controls,
            ssl_context is not None,
            self._bearer is not None,
        )
        return self.bound

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    def _routes(self) -> list[web.RouteDef]:
        return [
            web.get("/metrics", self._metrics),
            web.get("/healthz", self._healthz),
            web.get("/readyz", self._readyz),
            web.get("/v1/groups", self._groups),
            web.get("/v1/groups/{group_id}", self._group),
            web.get("/v1/transactions", self._transactions),
            web.get("/v1/transactions/{transactional_id}", self._transaction),
            web.post("/v1/test/groups/{group_id}/rebalance", self._rebalance),
            web.post("/v1/test/groups/{group_id}/members/{member_id}/expire", self._expire),
            web.post("/v1/test/transactions/{transactional_id}/abort", self._abort_transaction),
            web.post("/v1/test/transactions/{transactional_id}/expire", self._expire_transaction),
            web.get("/v1/test/errors", self._errors),
            web.post("/v1/test/errors", self._add_error),
            web.delete("/v1/test/errors", self._clear_faults),
            web.get("/v1/test/latency", self._latency),
            web.post("/v1/test/latency", self._set_latency),
            web.get("/v1/test/config", self._config),
            web.post("/v1/test/config", self._set_config),
        ]

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._bearer is not None and request.path not in _PROBES:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, self._bearer):
                response = _error(401, "a bearer token is required (Authorization: Bearer <token>)")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        if request.path.startswith("/v1/test/") and self._faults is None:
            return _error(403, "test controls are off: start kcoord serve with --enable-test-controls")
        try:
            return await handler(request)
        except TestControlError as exc:
            return _error(exc.status, str(exc))

    # -- observing --------------------------------------------------------------------------------------
    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, request: web.Request) -> web.Response:
        ctx = self._obs.ctx
        if ctx.shutting_down:
            return web.json_response({"status": "shutting down"}, status=503)
        storage_ok, reason = ctx.data.logs.policy.ready()  # storage/faults.py: refusing writes?
        if not storage_ok:
            return web.json_response({"status": "not ready", "reason": reason}, status=503)
        return web.json_response({"status": "ready", "listening": str(ctx.advertised)})

    async def _groups(self, request: web.Request) -> web.Response:
        manager = self._obs.ctx.manager
        return web.json_response({"groups": [group_summary(manager, g) for g in all_groups(manager)]})

    async def _group(self, request: web.Request) -> web.Response:
        ctx = self._obs.ctx
        group = find_group(ctx.manager, request.match_info["group_id"])
        if group is None:
            return _error(404, f"no group {request.match_info['group_id']}")
        return web.json_response(group_detail(ctx.manager, ctx.data, group, TopicData.now_ms()))

    async def _transactions(self, request: web.Request) -> web.Response:
        states = parse_states(request.query.getall("state", []))
        if isinstance(states, str):
            return _error(400, states)
        tc, now_ms = self._obs.ctx.transactions, TopicData.now_ms()
        views = [transaction_summary(tc, md, now_ms) for md in all_transactions(tc, states)]
        return web.json_response({"transactions": views})

    async def _transaction(self, request: web.Request) -> web.Response:
        ctx, transactional_id = self._obs.ctx, request.match_info["transactional_id"]
        md = ctx.transactions.metadata(transactional_id)
        if md is None:
            return _error(404, f"no transactional id {transactional_id}")
        return web.json_response(transaction_detail(ctx.transactions, ctx.data.logs, md, TopicData.now_ms()))

    # -- test controls ----------------------------------------------------------------------------------
    async def _abort_transaction(self, request: web.Request) -> web.Response:
        """Fence the producer and abort its Ongoing transaction; answers the transaction's view once the
        abort is decided (PrepareAbort durable, as EndTxn answers); the markers follow."""
        transactional_id = request.match_info["transactional_id"]
        await _control(self._obs.ctx.transactions.abort, transactional_id)
        return await self._transaction(request)

    async def _expire_transaction(self, request: web.Request) -> web.Response:
        """Expire an idle transactional id (Empty, CompleteCommit, CompleteAbort) now: its tombstone."""
        transactional_id = request.match_info["transactional_id"]
        await _control(self._obs.ctx.transactions.expire, transactional_id)
        return web.json_response({"transactional_id": transactional_id, "expired": True})

    async def _rebalance(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group_id"]
        self._obs.ctx.manager.controls.force_rebalance(group_id)
        return await self._group(request)

    async def _expire(self, request: web.Request) -> web.Response:
        group_id, member_id = request.match_info["group_id"], request.match_info["member_id"]
        self._obs.ctx.manager.controls.expire_member(group_id, member_id)
        return await self._group(request)

    async def _errors(self, request: web.Request) -> web.Response:
        assert self._faults is not None
        return web.json_response({"errors": [f.to_json() for f in self._faults.errors]})

    async def _add_error(self, request: web.Request) -> web.Response:
        assert self._faults is not None
        body = await _json_body(request)
        api_key = _api_key(body.get("api"))
        if api_key not in ERROR_APIS:
            names = sorted(API_NAMES[k] for k in ERROR_APIS)
            raise TestControlError(400, f"errors can be injected into {names}, not {body.get('api')!r}")
        error = _error_code(body.get("error"))
        if error is ErrorCode.NONE:
            raise TestControlError(400, "inject an error code other than NONE")
        count = body.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise TestControlError(400, f"count must be a positive integer, got {count!r}")
        group_id = body.get("group_id")
        if group_id is not None and not isinstance(group_id, str):
            raise TestControlError(400, "group_id must be a string")
        fault = self._faults.add_error(api_key, error, count, group_id)
        return web.json_response(fault.to_json(), status=201)

    async def _clear_faults(self, request: web.Request) -> web.Response:
        assert self._faults is not None
        self._faults.clear()
        return web.json_response({"errors": [], "latency_ms": {}})

    async def _latency(self, request: web.Request) -> web.Response:
        assert self._faults is not None
        latency = {API_NAMES.get(k, str(k)): ms for k, ms in sorted(self._faults.latency_ms.items())}
        return web.json_response({"latency_ms": latency})

    async def _set_latency(self, request: web.Request) -> web.Response:
        assert self._faults is not None
        body = await _json_body(request)
        api_key = _api_key(body.get("api"))
        if api_key not in self._obs.ctx.handlers:
            raise TestControlError(400, f"no handler for api {body.get('api')!r}")
        ms = body.get("ms")
        if not isinstance(ms, int) or isinstance(ms, bool) or not 0 <= ms <= 600_000:
            raise TestControlError(400, f"ms must be an integer from 0 to 600000, got {ms!r}")
        self._faults.set_latency(api_key, ms)
        return await self._latency(request)

    async def _config(self, request: web.Request) -> web.Response:
        config = self._obs.ctx.manager.config
        return web.json_response(
            {
                "group_initial_rebalance_delay_ms": config.group_initial_rebalance_delay_ms,
                "group_min_session_timeout_ms": config.group_min_session_timeout_ms,
                "group_max_session_timeout_ms": config.group_max_session_timeout_ms,
            }
        )

    async def _set_config(self, request: web.Request) -> web.Response:
        self._obs.ctx.manager.controls.update_config(await _json_body(request))
        return await self._config(request)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _control(action: Callable[[str, OnControl], None], transactional_id: str) -> None:
    """Run a transaction control and wait for its `done`; a refusal raises with its HTTP status."""
    answered: asyncio.Future[ControlResult] = asyncio.get_running_loop().create_future()

    def done(result: ControlResult) -> None:
        if not answered.done():  # the wait may have timed out (and cancelled it)
            answered.set_result(result)

    action(transactional_id, done)
    try:
        result = await asyncio.wait_for(answered, CONTROL_TIMEOUT_S)
    except TimeoutError:
        raise TestControlError(504, f"transactional id {transactional_id}: no answer within 30 s") from None
    if result.error is not ErrorCode.NONE:
        detail = f": {result.message}" if result.message else ""
        raise TestControlError(control_status(result), f"{result.error.name}{detail}")


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TestControlError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise TestControlError(400, "the body must be a JSON object")
    return body


def _api_key(value: object) -> int:
    """An API by Kafka name ("Heartbeat", any case) or key (12)."""
    if isinstance(value, int) and not isinstance(value, bool) and value in API_NAMES:
        return value
    if isinstance(value, str) and value.lower() in _API_KEYS:
        return _API_KEYS[value.lower()]
    raise TestControlError(400, f"unknown api {value!r}: give a Kafka API name or key")


def _error_code(value: object) -> ErrorCode:
    """An error by Kafka name ("NOT_COORDINATOR") or code (16)."""
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return ErrorCode(value)
        if isinstance(value, str):
            return ErrorCode[value.upper()]
    except (KeyError, ValueError):
        pass
    raise TestControlError(400, f"unknown error {value!r}: give a Kafka error name or code")
