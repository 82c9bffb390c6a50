"""The HTTP endpoint (`--http-listen`): /metrics, /healthz, /readyz, /v1/groups, /v1/transactions and the
test controls.

aiohttp serves it on the coordinator's own event loop, so every handler reads the group and transaction
state between two Kafka requests: a consistent snapshot without locks. The test controls (`/v1/test/...`,
only with `--enable-test-controls`, 403 otherwise) call the group manager's transitions, the transaction
coordinator's controls and the fault table; see docs/running/settings.md ("the HTTP endpoint") for every route
with a curl example.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from kcoord.broker.context import ServerContext
from kcoord.broker.topics.data import TopicData
from kcoord.coordinator.groups.controls import TestControlError
from kcoord.coordinator.transactions import ControlResult
from kcoord.coordinator.transactions.results import OnControl
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.config import HostPort
from kcoord.wiring.controls.names import api_key, api_name
from kcoord.wiring.controls.routes import LEGACY_ERROR_APIS, json_body, test_routes
from kcoord.wiring.controls.surface import TestControls
from kcoord.wiring.group_views import all_groups, find_group, group_detail, group_summary
from kcoord.wiring.metrics import KcoordCollector, MetricsSource
from kcoord.wiring.share_views import share_group_detail, share_group_summaries
from kcoord.wiring.txn_metrics import TransactionCollector
from kcoord.wiring.txn_views import (
    all_transactions,
    control_status,
    parse_states,
    transaction_detail,
    transaction_summary,
)

__all__ = ["HttpEndpoint", "Observed"]

log = logging.getLogger("kcoord.http")

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
    controls: TestControls | None  # with --enable-test-controls
    max_groups: int


class HttpEndpoint:
    def __init__(self, observed: Observed) -> None:
        self._obs = observed
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(KcoordCollector(observed.metrics, observed.max_groups))
        self._txn_collector = self._transaction_collector()
        self._registry.register(self._txn_collector)
        self._registry.register(ProcessCollector(registry=None))
        for collector in observed.metrics.extra:
            self._registry.register(collector)
        self._controls = observed.controls
        self._runner: web.AppRunner | None = None
        self._bearer: bytes | None = None
        self.bound: HostPort | None = None

    def _transaction_collector(self) -> TransactionCollector:
        ctx = self._obs.ctx
        return TransactionCollector(
            ctx.transactions, ctx.data.logs.partitions, ctx.data.now_ms, self._obs.max_groups
        )

    def state_replaced(self) -> None:
        """A test-control reset replaced the transaction coordinator and the partition logs."""
        self._registry.unregister(self._txn_collector)
        self._txn_collector = self._transaction_collector()
        self._registry.register(self._txn_collector)

    async def start(
        self, listen: HostPort, ssl_context: ssl.SSLContext | None = None, bearer_token: str | None = None
    ) -> HostPort:
        """Serve on `listen`; over TLS with `ssl_context`; with `bearer_token`, every path but the
        probes (/healthz, /readyz) needs `Authorization: Bearer <token>` (compared in constant time)."""
        self._bearer = None if not bearer_token else f"Bearer {bearer_token}".encode()
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
            self._controls is not None,
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
            web.get("/v1/share-groups", self._share_groups),
            web.get("/v1/share-groups/{group_id}", self._share_group),
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
            *test_routes(self._controls_or_403),
        ]

    def _controls_or_403(self) -> TestControls:
        if self._controls is None:
            raise TestControlError(
                403, "test controls are off: start kcoord serve with --enable-test-controls"
            )
        return self._controls

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._bearer is not None and request.path not in _PROBES:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, self._bearer):
                response = _error(401, "a bearer token is required (Authorization: Bearer <token>)")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        if request.path.startswith("/v1/test/") and self._controls is None:
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
        storage_ok, reason = ctx.data.logs.policy.ready()  # kcoord/storage/faults.py: refusing writes?
        if storage_ok and ctx.brokers is not None:  # cluster mode: the database must be reachable
            storage_ok, reason = ctx.brokers.ready()
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

    async def _share_groups(self, request: web.Request) -> web.Response:
        return web.json_response({"groups": share_group_summaries(self._obs.ctx)})

    async def _share_group(self, request: web.Request) -> web.Response:
        detail = share_group_detail(self._obs.ctx, request.match_info["group_id"])
        if detail is None:
            return _error(404, f"no share group {request.match_info['group_id']}")
        return web.json_response(detail)

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
        controls = self._controls_or_403()
        errors = [f.legacy_view() for f in controls.fault_table.armed if f.kind == "error"]
        return web.json_response({"errors": errors})

    async def _add_error(self, request: web.Request) -> web.Response:
        """The older route: group coordinator APIs only, `group_id` as the filter."""
        controls = self._controls_or_403()
        body = await json_body(request)
        if api_key(body.get("api")) not in LEGACY_ERROR_APIS:
            names = sorted(api_name(k) for k in LEGACY_ERROR_APIS)
            raise TestControlError(400, f"errors can be injected into {names}, not {body.get('api')!r}")
        group_id = body.get("group_id")
        view = await controls.fail(body.get("api"), body.get("error"), body.get("count", 1), group=group_id)
        return web.json_response({**view, "group_id": view["group"]}, status=201)

    async def _clear_faults(self, request: web.Request) -> web.Response:
        await self._controls_or_403().clear_faults()
        return web.json_response({"errors": [], "latency_ms": {}})

    async def _latency(self, request: web.Request) -> web.Response:
        latency = self._controls_or_403().fault_table.latency_ms
        return web.json_response({"latency_ms": {api_name(k): ms for k, ms in sorted(latency.items())}})

    async def _set_latency(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        await self._controls_or_403().set_latency(body.get("api"), body.get("ms"))
        return await self._latency(request)

    async def _config(self, request: web.Request) -> web.Response:
        return web.json_response(await self._controls_or_403().configure())

    async def _set_config(self, request: web.Request) -> web.Response:
        return web.json_response(await self._controls_or_403().configure(**await json_body(request)))


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
