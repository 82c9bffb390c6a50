"""`App.reset()` and `App.abandon()`: the state replaced behind live connections, or dropped as a crash.

reset: reading stops on every connection (bytes that still arrive are kept for later), parked requests
are answered as at shutdown (JoinGroup/SyncGroup NOT_COORDINATOR, long-poll Fetch empty) and what was
received is answered; the old storage closes without fsync, the data directory is emptied and a fresh
state opens as at startup (the SCRAM bootstrap users written again); the connections then read on,
their next requests served by the new state. Nothing reconnects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from kcoord.broker.connection import Connection
from kcoord.broker.context import DelayedResponses, ServerContext
from kcoord.broker.listener import Security
from kcoord.broker.timers import AsyncioTimers, MovableClock, SystemClock
from kcoord.wiring.app_state import (
    State,
    abandon_state,
    close_state,
    empty_data_dir,
    share_edge,
    stop_state,
    sweep_trash,
)
from kcoord.wiring.config import Config
from kcoord.wiring.http import HttpEndpoint

__all__ = ["ResettableServer", "abandon_app", "install_state", "reset_app"]

log = logging.getLogger("kcoord.app")


class ResettableServer(Protocol):
    """What a reset and a crash do to the server (`kcoord.wiring.app.App`, which calls them: a Protocol,
    so this module never imports the app that imports it)."""

    state: State | None
    http: HttpEndpoint | None

    @property
    def config(self) -> Config: ...

    @property
    def ctx(self) -> ServerContext | None: ...

    @property
    def clock(self) -> SystemClock | MovableClock: ...

    @property
    def timers(self) -> AsyncioTimers | None: ...

    @property
    def connections(self) -> set[Connection]: ...

    @property
    def servers(self) -> list[asyncio.Server]: ...

    @property
    def security(self) -> Security: ...

    async def open_state(self) -> State: ...

    async def settle(self, timeout_s: float) -> None: ...

    def wire_metrics(self) -> None: ...


# A reset waits at most this long for the requests in flight to be answered (a delay fault may hold one).
RESET_SETTLE_S = 2.0


async def reset_app(app: ResettableServer) -> float:
    """Milliseconds the reset took."""
    ctx, old, timers = app.ctx, app.state, app.timers
    assert ctx is not None and old is not None and timers is not None
    started = time.perf_counter()
    ctx.holding = True
    for conn in list(app.connections):
        conn.hold()
    try:
        stop_state(old)
        ctx.delayed.fire_all()
        await app.settle(RESET_SETTLE_S)
        timers.cancel_all()
        if isinstance(app.clock, MovableClock):
            app.clock.skew_s = 0.0
        await close_state(old, fsync=False)
        empty_data_dir(app.config)
        state = await app.open_state()
        state.producer_ids.continue_after(old.producer_ids)
        install_state(app, state)
        await app.security.bootstrap_scram(state.credentials)
    finally:
        ctx.holding = False
        for conn in list(app.connections):
            conn.release()
    elapsed_ms = (time.perf_counter() - started) * 1000
    sweep_trash(app.config)  # after the clock stops: its thread competes for the interpreter
    log.info("test control: reset in %.1f ms", elapsed_ms)
    return round(elapsed_ms, 3)


def install_state(app: ResettableServer, state: State) -> None:
    """Serve `state` from now on: the context every connection holds points at it."""
    ctx = app.ctx
    assert ctx is not None
    app.state = state
    ctx.manager, ctx.topics, ctx.data = state.manager, state.topics, state.data
    ctx.producer_ids, ctx.transactions, ctx.markers = state.producer_ids, state.transactions, state.markers
    ctx.acls, ctx.credentials, ctx.leadership = state.acls, state.credentials, state.leadership
    ctx.authorizer = None if state.acls is None else state.acls.authorizer
    ctx.share = share_edge(state, app.config)  # the old sessions went with the old share partitions
    ctx.delayed = DelayedResponses(asyncio.get_running_loop())
    app.security.add_scram(state.credentials.lookup)
    app.wire_metrics()
    if app.http is not None:
        app.http.state_replaced()


async def abandon_app(app: ResettableServer) -> None:
    for server in app.servers:
        server.close()
    if app.ctx is not None:
        app.ctx.shutting_down = True
    for conn in list(app.connections):
        conn.drop()
    if app.timers is not None:
        app.timers.cancel_all()
    state, app.state = app.state, None
    if state is not None:
        abandon_state(state)
    http, app.http = app.http, None
    if http is not None:
        await http.stop()
    log.warning("abandoned: connections dropped, storage closed without fsync (a crash)")
