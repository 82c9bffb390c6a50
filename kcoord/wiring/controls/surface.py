"""`TestControls`: what a test drives and reads (docs: fixtures.md's table), on the server's own loop.

Built by `App.startup()` with `--enable-test-controls` (`app.controls`; None otherwise). Every method
is a coroutine run on the server's event loop between two requests, returns JSON-able values and
raises `ControlError(status, message)` for a call that cannot apply. The HTTP routes
(kcoord/wiring/http.py) and the pytest plugin (kcoord.testing) call exactly these.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, Protocol

from kcoord.broker.context import ServerContext
from kcoord.broker.timers import AsyncioTimers, MovableClock, MovableTimers, SystemClock
from kcoord.broker.topics.configs import InvalidConfig, validate_topic_configs
from kcoord.broker.topics.data import RETENTION_CHECK_INTERVAL_MS
from kcoord.coordinator.groups.controls import RUNTIME_SETTINGS
from kcoord.coordinator.metadata import TopicExists, validate_topic_name
from kcoord.coordinator.transactions.state import TransactionState
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.app_state import State
from kcoord.wiring.controls.faults import Fault, FaultTable, Kind
from kcoord.wiring.controls.inspect import committed_view, group_view, records_view
from kcoord.wiring.controls.names import ControlError, api_key, error_code
from kcoord.wiring.controls.share_views import share_partition_view
from kcoord.wiring.controls.wiring import ControlsLayer, RequestLog

__all__ = ["ControlledServer", "TestControls"]

log = logging.getLogger("kcoord.controls")

MAX_ADVANCE_S = 10 * 365 * 86_400.0
# advance() returns once what fired is durable (a timed-out transaction: its abort, markers and
# completion), waiting this long at most.
SETTLE_TIMEOUT_S = 5.0
_BETWEEN = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)
# The log retention check on the movable clock, so advance() runs it when an interval ends inside its
# window. Kafka: LogManager.startup schedules "kafka-log-retention" (cleanupLogs) InitialTaskDelayMs
# after start, then every log.retention.check.interval.ms.
LOG_RETENTION_KEY = "log-retention-check"
LOG_RETENTION_FIRST_MS = 30_000  # LogManager.InitialTaskDelayMs


class ControlledServer(Protocol):
    """What the controls need of the server they run in (`kcoord.wiring.app.App`, which builds them:
    a Protocol, so the controls never import the app that imports them)."""

    @property
    def ctx(self) -> ServerContext | None: ...

    @property
    def state(self) -> State | None: ...

    @property
    def clock(self) -> SystemClock | MovableClock: ...

    @property
    def timers(self) -> AsyncioTimers | None: ...

    async def reset(self) -> float:
        """The state as after startup on an empty data directory; milliseconds it took."""
        ...

    def plain_handlers(self) -> dict[int, Any]:
        """The API handlers the server serves (before any test-control wrapping)."""
        ...


class TestControls:
    __test__ = False  # not a pytest class

    def __init__(self, app: ControlledServer) -> None:
        self._app = app
        self.fault_table = FaultTable()
        self.request_log = RequestLog(app.clock.now_ms)
        # Built before the listeners bind: the app passes this layer to the edge's handler table
        self.layer = ControlsLayer(self.fault_table, self.request_log)
        self._exclusive = asyncio.Lock()  # reset() and advance() never interleave
        self._arm_log_retention(LOG_RETENTION_FIRST_MS)

    @property
    def _ctx(self) -> ServerContext:
        ctx = self._app.ctx
        assert ctx is not None
        return ctx

    # -- lifecycle and time ---------------------------------------------------------------------------
    async def reset(self) -> dict[str, Any]:
        """The server as right after startup with an empty data directory; connections stay open."""
        async with self._exclusive:
            self.fault_table.reset()
            reset_ms = await self._app.reset()
            self.request_log.clear()
            self._arm_log_retention(LOG_RETENTION_FIRST_MS)  # the reset cancelled every timer
            return {"reset_ms": reset_ms}

    async def advance(self, seconds: float) -> dict[str, Any]:
        """Jump the clock forward: the timers due in the window fire in deadline order, and nothing else;
        delayed responses due answer; returns when what fired wrote is durable.

        The periodic checks are timers too, each run when its interval ends inside the window, as on
        Kafka while that much time passed, never because advance() was called: offset retention every
        offsets.retention.check.interval.ms (Kafka's GroupCoordinatorShard.
        scheduleGroupMetadataExpiration), timed-out transactions and expired transactional ids at
        their cleanup intervals (TransactionCoordinator.startup, TransactionStateManager.
        enableTransactionalIdExpiration), log retention every log.retention.check.interval.ms
        (LOG_RETENTION_KEY)."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise ControlError(400, f"seconds must be a number, got {seconds!r}")
        if not 0 <= seconds <= MAX_ADVANCE_S:
            raise ControlError(400, f"seconds must be from 0 to {MAX_ADVANCE_S:.0f}, got {seconds}")
        async with self._exclusive:
            app, ctx = self._app, self._ctx
            timers = app.timers
            assert isinstance(timers, MovableTimers), "test controls run on the movable timers"
            horizon = asyncio.get_running_loop().time() + seconds
            fired = timers.advance(seconds)
            fired += ctx.delayed.fire_due(horizon)
            await self._settle_writes()
            return {"advanced_ms": round(seconds * 1000), "now_ms": app.clock.now_ms(), "fired": fired}

    def _arm_log_retention(self, delay_ms: int) -> None:
        """The partition logs' own check (TopicData.start_retention) runs on the loop's real time, which
        advance() does not move; this one is on the movable timers. Both run as real time passes: a
        second check finds nothing more to delete."""
        timers = self._app.timers
        if not isinstance(timers, MovableTimers):
            return

        def check() -> None:
            self._arm_log_retention(RETENTION_CHECK_INTERVAL_MS)
            self._ctx.data.check_retention()

        timers.schedule(LOG_RETENTION_KEY, delay_ms, check)

    async def _settle_writes(self) -> None:
        """Until what fired is durable: no append queued in either log and no transaction between
        two states (a timed-out abort writes PrepareAbort, then its markers, then CompleteAbort)."""
        state = self._app.state
        assert state is not None
        deadline = asyncio.get_running_loop().time() + SETTLE_TIMEOUT_S
        while asyncio.get_running_loop().time() < deadline:
            await state.log.flush()
            await state.data.logs.flush()
            await asyncio.sleep(0)
            if not state.log.pending and not state.data.logs.pending and _transactions_settled(state):
                return
            await asyncio.sleep(0.001)
        log.warning("advance: writes still in flight after %.1f s", SETTLE_TIMEOUT_S)

    # -- topics and inspection ------------------------------------------------------------------------
    async def create_topic(
        self, name: str, partitions: int = 1, config: dict[str, str] | None = None
    ) -> dict[str, Any]:
        ctx = self._ctx
        if not isinstance(name, str) or (reason := validate_topic_name(name)) is not None:
            raise ControlError(400, f"bad topic name {name!r}: {reason if isinstance(name, str) else ''}")
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions <= 0:
            raise ControlError(400, f"partitions must be a positive integer, got {partitions!r}")
        if ctx.topics.get(name) is not None or ctx.topics.is_pending(name):
            raise ControlError(409, f"topic {name} already exists")
        try:
            configs = validate_topic_configs({str(k): str(v) for k, v in (config or {}).items()})
        except (InvalidConfig, AttributeError) as exc:
            raise ControlError(400, f"bad topic config: {exc}") from None
        durable: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        ctx.topics.create([(name, partitions, configs)], durable.set_result)
        error = await durable
        if isinstance(error, TopicExists):  # another node created it first (cluster mode)
            raise ControlError(409, f"topic {name} already exists")
        if error is not None:
            raise ControlError(503, f"topic {name} not created: {error}")
        return {"name": name, "partitions": partitions}

    async def records(self, topic: str) -> list[dict[str, Any]]:
        return records_view(self._ctx.topics, self._ctx.data, topic)

    async def committed(self, group: str) -> list[dict[str, Any]]:
        return committed_view(self._ctx.manager, group)

    async def group(self, group_id: str) -> dict[str, Any]:
        return group_view(self._ctx.manager, group_id)

    # -- share groups (issue 34) ----------------------------------------------------------------------
    async def share_partition(self, group: str, topic: str, partition: int) -> dict[str, Any]:
        """A share partition's start offset and in-flight records with their states."""
        _count(partition, "partition", minimum=0)
        state = self._app.state
        shares = None if state is None else state.share_partitions
        return share_partition_view(shares, self._ctx.topics, group, topic, partition)

    async def expire_share_locks(self, group: str | None = None) -> dict[str, Any]:
        """Every acquisition lock (of `group`, or of every share group) expires now, as if its timer
        had fired (SharePartition.releaseAcquisitionLockOnTimeout); returns once the releases are
        durable, with how many records were released."""
        _optional(group, str, "group")
        state = self._app.state
        if state is None or state.share_partitions is None:
            raise ControlError(404, "this server has no share partitions (cluster mode)")
        async with self._exclusive:
            released = state.share_partitions.expire_locks_now(group)
            await self._settle_writes()
        return {"released": released}

    # -- faults ---------------------------------------------------------------------------------------
    async def fail(
        self,
        api: object,
        error: object,
        count: int = 1,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
    ) -> dict[str, Any]:
        code = error_code(error)
        if code is ErrorCode.NONE:
            raise ControlError(400, "inject an error code other than NONE")
        _optional(topic, str, "topic")
        _optional(group, str, "group")
        if partition is not None:
            _count(partition, "partition", minimum=0)
        return self._arm(
            "error", api, count, error=code, topic=topic, partition=partition, group=group
        ).view()

    async def delay(self, api: str | int, ms: int, count: int = 1) -> dict[str, Any]:
        _count(ms, "ms", minimum=0, maximum=600_000)
        return self._arm("delay", api, count, ms=ms).view()

    async def disconnect(self, api: str | int, count: int = 1) -> dict[str, Any]:
        return self._arm("disconnect", api, count).view()

    def _arm(self, kind: Kind, api: object, count: int, **filters: Any) -> Fault:
        key = api_key(api)
        if key not in self._app.plain_handlers():
            raise ControlError(400, f"the server does not serve {api!r}")
        _count(count, "count", minimum=1)
        fault = self.fault_table.add(kind=kind, api_key=key, count=count, **filters)
        log.info("test control: armed %s", fault.view())
        return fault

    async def fired(self) -> list[dict[str, Any]]:
        return [f.view() for f in self.fault_table.fired]

    async def faults(self) -> list[dict[str, Any]]:
        return [f.view() for f in self.fault_table.armed]

    async def clear_faults(self) -> dict[str, Any]:
        self.fault_table.clear()
        return {}

    async def set_latency(self, api: object, ms: object) -> dict[int, int]:
        """`/v1/test/latency`: every request of `api` answered `ms` later (0 removes it); the latencies."""
        key = api_key(api)
        if key not in self._app.plain_handlers():
            raise ControlError(400, f"no handler for api {api!r}")
        _count(ms, "ms", minimum=0, maximum=600_000)
        assert isinstance(ms, int)
        if ms:
            self.fault_table.latency_ms[key] = ms
        else:
            self.fault_table.latency_ms.pop(key, None)
        return dict(self.fault_table.latency_ms)

    # -- the request log and settings -----------------------------------------------------------------
    async def requests(self, since: int = 0) -> list[dict[str, Any]]:
        _count(since, "since", minimum=0)
        return self.request_log.since(since)

    async def configure(self, **changes: Any) -> dict[str, Any]:
        """Change runtime settings (400 naming the changeable ones for any other); those now in force."""
        manager = self._ctx.manager
        if changes:
            manager.controls.update_config(changes)
        return {name: getattr(manager.config, name) for name in RUNTIME_SETTINGS}


def _count(value: object, name: str, minimum: int, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ControlError(400, f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ControlError(400, f"{name} must be at most {maximum}, got {value!r}")


def _optional(value: object, kind: type, name: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ControlError(400, f"{name} must be a {kind.__name__} or null, got {value!r}")


def _transactions_settled(state: State) -> bool:
    return all(md.pending is None and md.state not in _BETWEEN for md in state.transactions.transactions())
