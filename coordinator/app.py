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
from kcoord.coordinator.config import Config, HostPort
from kcoord.coordinator.group_views import group_lags
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.http import HttpEndpoint, Observed
from kcoord.coordinator.metrics import MetricsSource, TimedFileOps
from kcoord.coordinator.persistence import Replayer, StorageRecordLog, storage_config
from kcoord.coordinator.producer_ids import ProducerIds
from kcoord.coordinator.security.acls_store import AclStore
from kcoord.coordinator.security.authorizer import StandardAuthorizer
from kcoord.coordinator.security.credentials import ScramCredentials
from kcoord.coordinator.security.listeners import Listener
from kcoord.coordinator.server.apis import HANDLERS, served_versions
from kcoord.coordinator.server.connection import Connection
from kcoord.coordinator.server.context import DelayedResponses, ServerContext
from kcoord.coordinator.server.listener import ListenerSetup, Security
from kcoord.coordinator.server.markers import CoordinatorMarkers, TxnMarkers
from kcoord.coordinator.server.timers import AsyncioTimers, SystemClock
from kcoord.coordinator.topics import TopicRegistry
from kcoord.coordinator.topics.data import TopicData
from kcoord.coordinator.topics.leadership import SingleNodeLeadership
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.partition_log import PartitionLogs
from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.storage.faults import EXIT_STORAGE_FATAL, FaultPolicy, StorageFault

__all__ = ["App", "raise_open_files_limit", "run"]

log = logging.getLogger("kcoord.app")


class App:
    """One coordinator process: storage, group manager, topic registry and listener."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.connections: set[Connection] = set()
        self._servers: list[asyncio.Server] = []
        self.security = Security(config)
        self._credentials: ScramCredentials | None = None
        # listener name -> the bound address (port 0 resolved); `bound` is the first listener's
        self.bound_by_listener: dict[str, HostPort] = {}
        self._log: Any = None
        self._timers: AsyncioTimers | None = None
        self._data: TopicData | None = None
        self.ctx: ServerContext | None = None
        self._acls: AclStore | None = None
        self.bound: HostPort | None = None
        # The HTTP endpoint and what it counts: only with --http-listen (no cost on requests otherwise).
        self.metrics = MetricsSource() if config.http_listen is not None else None
        self.http: HttpEndpoint | None = None

    async def startup(self) -> None:
        """Recover storage into memory, then bind the listener (in that order)."""
        loop = asyncio.get_running_loop()
        self._timers = AsyncioTimers(loop)
        record_log = StorageRecordLog()
        topics = TopicRegistry(record_log)
        manager = GroupManager(
            self.config.group_config(), SystemClock(), self._timers, record_log, topics=topics
        )
        producer_ids = ProducerIds(record_log)
        # The transaction coordinator: a second tenant of the same log and runtime. Its markers go to
        # the partition logs, which open after recovery: the writer is connected to them below.
        coordinator_markers = CoordinatorMarkers(loop)
        transactions = TransactionCoordinator(
            self.config.transaction_config(), SystemClock(), self._timers, record_log, producer_ids,
            coordinator_markers,
        )  # fmt: skip
        # The authorizer (issue 25): only with --authorizer standard; its ACLs are replayed with the rest.
        acls = _acl_store(self.config, record_log)
        self._acls = acls
        credentials = ScramCredentials(record_log)
        replayer = Replayer(manager, topics, producer_ids, transactions, acls=acls, credentials=credentials)
        started = time.monotonic()
        ops = None
        if self.metrics is not None:
            ops = TimedFileOps(self.metrics.fsync_seconds)
            record_log.append_seconds = self.metrics.append_seconds
            manager.observe_transitions(self.metrics.events)
        # One storage-fault policy for the coordinator log and the partition logs (storage/faults.py).
        policy = FaultPolicy(on_fatal=_halt_soon)
        self._log = await storage.Log.open(
            self.config.data_dir, storage_config(self.config), replayer.apply, ops=ops, policy=policy
        )
        record_log.attach(self._log)
        replayer.finish()
        manager.on_loaded()
        partition_logs = await PartitionLogs.open(
            self.config.data_dir / "topics", fsync=self.config.fsync, now_ms=TopicData.now_ms, policy=policy
        )
        self._data = data = TopicData(topics, partition_logs)
        await data.remove_orphans()
        data.start_retention(loop)
        markers = TxnMarkers(data, manager)
        coordinator_markers.attach(markers)
        transactions.on_loaded()  # timers armed; transactions found in Prepare* get their markers
        # What recovery loaded (keydir, groups, offsets) lives as long as the process: keep it out of
        # the collector's full passes, which would walk all of it (tens of ms per 100k keys) while
        # clients wait. Frozen objects are still freed by reference counting when replaced.
        gc.freeze()
        log.info(
            "recovered data_dir=%s %s topics=%d seconds=%.3f",
            self.config.data_dir,
            replayer.summary(),
            len(topics.all()),
            time.monotonic() - started,
        )
        self._credentials = credentials
        await self.security.start(loop, credentials, lambda: self.ctx is not None and self.ctx.shutting_down)
        await self._bind(loop, manager, topics, producer_ids, transactions, markers)
        await self._start_http()

    async def _start_http(self) -> None:
        """After recovery and the Kafka listener: /readyz means recovered and listening."""
        if self.metrics is None or self.config.http_listen is None:
            return
        assert self.ctx is not None and self._data is not None
        ctx, data, metrics, log_ = self.ctx, self._data, self.metrics, self._log
        metrics.groups = ctx.manager.groups
        metrics.lags = lambda group_id: group_lags(ctx.manager, data, group_id, TopicData.now_ms())
        metrics.connections = lambda: len(self.connections)
        metrics.log_bytes = lambda: (
            sum(segment.size for segment in log_.segments) if log_ is not None else 0,
            sum(p.size for p in data.logs.partitions()),
        )
        metrics.compactions = lambda: int(log_.compactions)
        metrics.authentications = lambda: self.security.authentications
        observed = Observed(ctx, metrics, self.config.enable_test_controls, self.config.metrics_max_groups)
        self.http = HttpEndpoint(observed)
        tls = self.security.http_tls()
        await self.http.start(
            self.config.http_listen, None if tls is None else tls.context, self.config.http_bearer_token
        )

    async def _bind(
        self,
        loop: asyncio.AbstractEventLoop,
        manager: GroupManager,
        topics: TopicRegistry,
        producer_ids: ProducerIds,
        transactions: TransactionCoordinator,
        markers: TxnMarkers,
    ) -> None:
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
        assert self._data is not None, "the partition logs open before the listener binds"
        self.ctx = ServerContext(
            config=self.config,
            manager=manager,
            topics=topics,
            data=self._data,
            producer_ids=producer_ids,
            transactions=transactions,
            markers=markers,
            advertised=endpoints[first],
            delayed=DelayedResponses(loop),
            served=served_versions(dict(SERVED_VERSIONS)),
            leadership=SingleNodeLeadership(self.config.node_id),
            handlers=dict(HANDLERS),
            stats=None if self.metrics is None else self.metrics.requests,
            authorizer=None if self._acls is None else self._acls.authorizer,
            acls=self._acls,
            endpoints=endpoints,
            credentials=self._credentials,
        )
        await self._context_built(self.ctx)
        for server, listener in zip(self._servers, listeners, strict=True):
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

    async def _context_built(self, ctx: ServerContext) -> None:
        """Called once the context exists, before any listener accepts: cluster mode (a subclass
        in coordinator/cluster/node.py) routes the coordinator APIs and registers the node here."""

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
        self._servers.append(server)
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
        for server in self._servers:
            server.close()
        if ctx is not None:
            ctx.shutting_down = True  # /readyz answers 503 from here on
        http, self.http = self.http, None
        if http is not None:
            await http.stop()
        if ctx is not None:
            ctx.shutting_down = True
            for conn in list(self.connections):
                conn.drain()
            ctx.manager.shutdown()
            ctx.transactions.shutdown()
            ctx.delayed.fire_all()
            await self._settle(self.config.shutdown_timeout_s)
        for conn in list(self.connections):
            conn.close()
        if self._timers is not None:
            self._timers.cancel_all()
        data, self._data = self._data, None
        if data is not None:
            await data.close()  # partition logs: flush, fsync
        log_, self._log = self._log, None
        if log_ is not None:
            await log_.close()  # a StorageError here reaches _main: exit code 1
            log.info("storage closed (flushed, fsynced, snapshot written)")

    async def _settle(self, timeout_s: float) -> None:
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


def _acl_store(config: Config, record_log: StorageRecordLog) -> AclStore | None:
    """Kafka's authorizer.class.name=StandardAuthorizer with super.users and
    allow.everyone.if.no.acl.found; None (no authorizer, the default) otherwise."""
    if config.authorizer != "standard":
        return None
    authorizer = StandardAuthorizer(config.super_users, config.allow_everyone_if_no_acl_found)
    log.info(
        "authorizer=standard super_users=%s allow_everyone_if_no_acl_found=%s",
        ",".join(config.super_users) or "-",
        config.allow_everyone_if_no_acl_found,
    )
    return AclStore(authorizer, record_log)


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
    """A fault storage/faults.py calls fatal, or EIO from a read no `operation` named (the medium)."""
    if isinstance(exc, StorageFault):
        return exc.fatal
    return isinstance(exc, OSError) and exc.errno == errno.EIO


def run(config: Config, app_factory: Callable[[Config], App] = App) -> int:
    """Run the server until SIGTERM/SIGINT; the exit code. `app_factory`: cluster mode's subclass."""
    raise_open_files_limit()
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_main(config, app_factory))
