"""The server's lifecycle in named phases: `startup()` (open storage, recover, bind), `serve()`, `shutdown()`.

The listener opens only after storage recovery has replayed every record into the group manager and
the topic registry, so a client never sees half-loaded state. Shutdown stops accepting, answers or
fails what is in flight (parked JoinGroup/SyncGroup get NOT_COORDINATOR, parked fetches answer
empty), waits up to `shutdown_timeout_s` for durable writes to be acknowledged, then closes the log
(flush, fsync, snapshot, unlock).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from kcoord import storage
from kcoord.broker.apis import HANDLERS, served_versions
from kcoord.broker.connection import Connection
from kcoord.broker.context import DelayedResponses, ServerContext
from kcoord.broker.listener import ListenerSetup, Security
from kcoord.broker.middleware import Middleware, handler_table
from kcoord.broker.security.listeners import Listener
from kcoord.broker.timers import AsyncioTimers, MovableClock, MovableTimers, SystemClock
from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.storage.faults import EXIT_STORAGE_FATAL, StorageFault
from kcoord.wiring.app_state import (
    State,
    close_state,
    open_state,
    share_edge,
    stop_state,
    sweep_trash,
)
from kcoord.wiring.backends import Services, StateBackends
from kcoord.wiring.config import Config, HostPort
from kcoord.wiring.controls import TestControls
from kcoord.wiring.controls.lifecycle import abandon_app, reset_app
from kcoord.wiring.group_views import group_lags
from kcoord.wiring.http import HttpEndpoint, Observed
from kcoord.wiring.local_backends import LocalBackends
from kcoord.wiring.metrics import MetricsSource
from kcoord.wiring.share_metrics import ShareCollector, ShareSource

__all__ = ["App", "raise_open_files_limit", "run"]

log = logging.getLogger("kcoord.app")


class App:
    """One coordinator process: storage, group manager, topic registry and listener."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.connections: set[Connection] = set()
        self.servers: list[asyncio.Server] = []
        self.security = Security(config)
        # listener name -> the bound address (port 0 resolved); `bound` is the first listener's
        self.bound_by_listener: dict[str, HostPort] = {}
        self.state: State | None = None
        self.clock: SystemClock | MovableClock = SystemClock()
        self._timers: AsyncioTimers | None = None
        # The test controls (--enable-test-controls): built by startup(), None otherwise.
        self.controls: TestControls | None = None
        self.ctx: ServerContext | None = None
        self.bound: HostPort | None = None
        # The HTTP endpoint and what it counts: only with --http-listen (no cost on requests otherwise).
        self.metrics = MetricsSource() if config.http_listen is not None else None
        self.share_metrics = ShareSource()  # the share groups' series (kcoord/wiring/share_metrics.py)
        if self.metrics is not None:
            self.metrics.extra.append(ShareCollector(self.share_metrics, lambda: config.metrics_max_groups))
        self.http: HttpEndpoint | None = None

    async def startup(self) -> None:
        """Recover storage into memory, then bind the listener (in that order)."""
        loop = asyncio.get_running_loop()
        if self.config.enable_test_controls:  # the clock advance() moves; the plain one otherwise
            self.clock = MovableClock()
            self._timers = MovableTimers(loop, self.clock)
        else:
            self._timers = AsyncioTimers(loop)
        started = time.monotonic()
        self.state = state = await self.open_state()
        sweep_trash(self.config)  # what a reset had not deleted yet when the process ended
        # What recovery loaded (keydir, groups, offsets) lives as long as the process: keep it out of
        # the collector's full passes, which would walk all of it (tens of ms per 100k keys) while
        # clients wait. Frozen objects are still freed by reference counting when replaced.
        gc.freeze()
        log.info(
            "recovered data_dir=%s %s topics=%d seconds=%.3f",
            self.config.data_dir,
            state.summary,
            len(state.topics.all()),
            time.monotonic() - started,
        )
        await self.security.start(
            loop, state.credentials, lambda: self.ctx is not None and self.ctx.shutting_down
        )
        if self.config.enable_test_controls:  # before binding: its layer wraps the handlers
            self.controls = TestControls(self)
        await self._bind(loop, state)
        await self._start_http()

    def backends(self) -> StateBackends:
        """Where the durable state lives (a hook): the data directory. Cluster mode (a subclass in
        kcoord/cluster/node.py) names PostgreSQL's shards, metadata and partition leases instead."""
        return LocalBackends(self.config, self.metrics)

    async def open_state(self) -> State:
        """Recover the durable state into memory (startup; a test-control reset)."""
        assert self._timers is not None
        services = Services(self.clock, self._timers, self.metrics, _halt_soon)
        return await open_state(self.config, self.backends(), services)

    @property
    def timers(self) -> AsyncioTimers | None:
        return self._timers

    def middlewares(self) -> list[Middleware]:
        """What wraps the API handlers (kcoord/broker/middleware.py orders them): the test controls'
        layer when they are on; cluster mode (kcoord/cluster/node.py) adds its routing."""
        return [] if self.controls is None else [self.controls.layer]

    def plain_handlers(self) -> dict[int, Any]:
        """The API handlers the server serves (before any test-control wrapping)."""
        return HANDLERS

    async def reset(self) -> float:
        """The test controls' reset (kcoord/wiring/controls/lifecycle.py): the state as after startup on
        an empty data directory, behind the same listeners and client connections; milliseconds."""
        return await reset_app(self)

    async def _start_http(self) -> None:
        """After recovery and the Kafka listener: /readyz means recovered and listening."""
        if self.metrics is None or self.config.http_listen is None:
            return
        assert self.ctx is not None
        ctx, metrics = self.ctx, self.metrics
        self.wire_metrics()
        metrics.connections = lambda: len(self.connections)
        metrics.authentications = lambda: self.security.authentications
        observed = Observed(ctx, metrics, self.controls, self.config.metrics_max_groups)
        self.http = HttpEndpoint(observed)
        tls = self.security.http_tls()
        await self.http.start(
            self.config.http_listen, None if tls is None else tls.context, self.config.http_bearer_token
        )

    def wire_metrics(self) -> None:
        """Point the metrics at the state (again after a test-control reset replaced it)."""
        if self.metrics is None or self.state is None:
            return
        state, metrics = self.state, self.metrics
        manager, data, log_ = state.manager, state.data, state.log
        metrics.groups = manager.groups
        metrics.lags = lambda group_id: group_lags(manager, data, group_id, data.now_ms())
        metrics.log_bytes = lambda: (
            sum(segment.size for segment in log_.segments) if log_ is not None else 0,
            sum(p.size for p in data.logs.partitions()),
        )
        metrics.compactions = lambda: int(log_.compactions) if log_ is not None else 0
        shares = self.share_metrics
        shares.manager, shares.shares, shares.topics, shares.data = (
            manager,
            state.share_partitions,
            state.topics,
            data,
        )

    async def _bind(self, loop: asyncio.AbstractEventLoop, state: State) -> None:
        # The context needs the advertised addresses, which depend on the bound ports (port 0 = any):
        # bind every listener without serving, build the context, then start accepting.
        listeners = self.config.resolved_listeners()
        endpoints: dict[str, HostPort] = {}
        for listener in listeners:
            server = await self._listen(loop, listener, self.security.setup(listener))
            port = server.sockets[0].getsockname()[1]
            self.bound_by_listener[listener.name] = HostPort(listener.host, port)
            endpoints[listener.name] = (
                HostPort(*listener.advertised)
                if listener.advertised is not None
                else HostPort("127.0.0.1" if listener.host in ("0.0.0.0", "::", "") else listener.host, port)
            )
        first = listeners[0].name
        self.bound = self.bound_by_listener[first]
        self.ctx = ServerContext(
            config=self.config,
            manager=state.manager,
            topics=state.topics,
            data=state.data,
            producer_ids=state.producer_ids,
            transactions=state.transactions,
            markers=state.markers,
            advertised=endpoints[first],
            delayed=DelayedResponses(loop),
            served=served_versions(dict(SERVED_VERSIONS), share_groups=state.share_partitions is not None),
            handlers=handler_table(self.middlewares()),
            stats=None if self.metrics is None else self.metrics.requests,
            authorizer=None if state.acls is None else state.acls.authorizer,
            acls=state.acls,
            endpoints=endpoints,
            credentials=state.credentials,
            leadership=state.leadership,
            share=share_edge(state, self.config),  # members leaving and groups deleted reach it
        )
        await self.context_built(self.ctx)
        for server, listener in zip(self.servers, listeners, strict=True):
            await server.start_serving()
            bound = self.bound_by_listener[listener.name]
            log.info(
                "listening on %s:%d advertised=%s node_id=%d listener=%s protocol=%s",
                bound.host,
                bound.port,
                endpoints[listener.name],
                self.config.node_id,
                listener.name,
                listener.security_protocol,
            )
        self.security.watch_certificates(loop)

    async def context_built(self, ctx: ServerContext) -> None:
        """A hook, called once the context exists, before any listener accepts: cluster mode (a subclass
        in kcoord/cluster/node.py) plugs in its ports and registers the node here."""

    async def _listen(
        self, loop: asyncio.AbstractEventLoop, listener: Listener, setup: ListenerSetup
    ) -> asyncio.Server:
        tls = self.security.tls_server(listener)
        server = await loop.create_server(
            lambda: self._new_connection(setup),
            listener.host,
            listener.port,
            backlog=4096,
            reuse_address=True,
            start_serving=False,
            ssl=None if tls is None else tls.context,
            ssl_handshake_timeout=None if tls is None else self.config.ssl_handshake_timeout_ms / 1000,
        )
        self.servers.append(server)
        return server

    def reload_certificates(self) -> None:
        """SIGHUP: rebuild every TLS context from its files (new connections get the new ones)."""
        self.security.reload_tls()

    def _new_connection(self, setup: ListenerSetup) -> Connection:
        assert self.ctx is not None, "connection accepted before the context was built"
        return Connection(self.ctx, self.connections, setup)

    async def shutdown(self) -> None:
        """Stop accepting, settle in-flight requests, close the log with a snapshot."""
        ctx = self.ctx
        for server in self.servers:
            server.close()
        if ctx is not None:
            ctx.shutting_down = True  # /readyz answers 503 from here on
        http, self.http = self.http, None
        if http is not None:
            await http.stop()
        if ctx is not None and self.state is not None:
            ctx.shutting_down = True
            for conn in list(self.connections):
                conn.drain()
            stop_state(self.state)
            ctx.delayed.fire_all()
            await self.settle(self.config.shutdown_timeout_s)
        for conn in list(self.connections):
            conn.close()
        if self._timers is not None:
            self._timers.cancel_all()
        state, self.state = self.state, None
        if state is not None:
            await close_state(state)

    async def abandon(self) -> None:
        """A crash of this in-process server (the test plugin's `kill()`): stop accepting, drop every
        connection unanswered, cancel the timers, close the logs as they are (no write of what is
        queued, no fsync, no snapshot), release the data-directory lock. A new `App` on the same
        directory then recovers as after kill -9 (kcoord/wiring/controls/lifecycle.py)."""
        await abandon_app(self)

    async def settle(self, timeout_s: float) -> None:
        """Wait (bounded) until every received request has been answered; durable writes finish first."""
        deadline = time.monotonic() + timeout_s
        while any(conn.in_flight for conn in self.connections):
            if time.monotonic() >= deadline:
                pending = sum(conn.in_flight for conn in self.connections)
                log.warning("shutdown: %d requests still unanswered after %.1fs, closing", pending, timeout_s)
                return
            await asyncio.sleep(0.01)


# A fatal storage fault's in-flight answers (retriable codes) get this long to leave; the backstop
# timer exits even if the event loop is stuck (a hung file system call) - well within 1 s either way.
HALT_DELAY_S = 0.2
HALT_BACKSTOP_S = 0.8


def _halt_soon(fault: StorageFault) -> None:
    """The fatal-fault action: exit with EXIT_STORAGE_FATAL, as Kafka's LogManager.handleLogDirFailure
    halts the broker when its only log directory fails. No clean shutdown: it would fsync again."""

    def halt() -> None:
        logging.shutdown()
        os._exit(EXIT_STORAGE_FATAL)

    asyncio.get_running_loop().call_later(HALT_DELAY_S, halt)
    backstop = threading.Timer(HALT_BACKSTOP_S, halt)
    backstop.daemon = True
    backstop.start()


def raise_open_files_limit() -> None:
    """Soft RLIMIT_NOFILE -> hard limit, so thousands of client connections fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open files limit from %d to %d: %s", soft, target, exc)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _main(config: Config, app_factory: Callable[[Config], App]) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    interrupts = 0

    def on_signal(signum: int) -> None:
        nonlocal interrupts
        interrupts += signum == signal.SIGINT
        if interrupts > 1:  # a second Ctrl-C forces the exit, whatever shutdown is waiting for
            log.error("second SIGINT: exiting without a clean shutdown")
            logging.shutdown()
            os._exit(130)
        log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        app = app_factory(config)
    except (OSError, ValueError) as exc:  # e.g. an unreadable PLAIN users file
        log.error("startup failed: %s", exc)
        return 1
    loop.add_signal_handler(signal.SIGHUP, app.reload_certificates)
    try:
        await app.startup()
    except (storage.StorageError, OSError) as exc:  # e.g. data dir locked, listen address in use
        await app.shutdown()
        if _fatal_storage_fault(exc):  # the medium failed while recovering: as at run time, exit 75
            log.critical("startup failed, fatal storage fault: %s; exit %d", exc, EXIT_STORAGE_FATAL)
            return EXIT_STORAGE_FATAL
        log.error("startup failed: %s", exc)
        return 1
    await stop.wait()
    try:
        await app.shutdown()
    except storage.StorageError as exc:
        log.error("shutdown could not close the log cleanly: %s", exc)
        return 1
    log.info("stopped")
    return 0


def _fatal_storage_fault(exc: BaseException) -> bool:
    """A fault kcoord/storage/faults.py calls fatal, or EIO from a read no `operation` named (the medium)."""
    if isinstance(exc, StorageFault):
        return exc.fatal
    return isinstance(exc, OSError) and exc.errno == errno.EIO


def run(config: Config, app_factory: Callable[[Config], App] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; the exit code. `app_factory`: cluster mode's subclass."""
    raise_open_files_limit()
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_main(config, App if app_factory is None else app_factory))
