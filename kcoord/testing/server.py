"""The server object tests get from `kcoord`, `kcoord_server` and `kcoord_factory`.

It owns one in-process kcoord (inprocess.ServerThread) and a persistent data directory, and turns the
test controls' JSON (`app.controls`, kcoord/wiring/controls/) into `kcoord.testing.views` objects.
Every method is a plain blocking call, for sync clients; an async test (aiokafka in the test's own
loop) awaits the same calls through `server.aio` (aio.py), so waiting never blocks the loop its clients
run on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from kcoord.testing.aio import AsyncCalls
from kcoord.testing.inprocess import LogLines, ServerThread
from kcoord.testing.settings import build_config
from kcoord.testing.views import Fault, Group, Record, RequestEntry, committed_map
from kcoord.wiring.app import App
from kcoord.wiring.config import HostPort
from kcoord.wiring.controls import ControlError

__all__ = ["KcoordServer"]

CALL_TIMEOUT_S = 60.0
STABLE_POLL_S = 0.02
LOOPBACK = "127.0.0.1"
Json = Any


class KcoordServer:
    """kcoord in this process on 127.0.0.1, a free port, a data directory that outlives restarts."""

    def __init__(self, settings: Mapping[str, Any], data_dir: Path) -> None:
        self.settings = dict(settings)
        self.data_dir = data_dir
        self._config = build_config(self.settings, data_dir, HostPort(LOOPBACK, 0))  # SettingsError now
        self.logs = LogLines()
        self.logs.attach(self._config.log_level)
        self._thread: ServerThread | None = None
        self.port = 0
        self._request_mark = 0  # the test's request log starts after this seq
        self._log_mark = 0
        self.aio = AsyncCalls(self)  # `await server.aio.wait_stable(...)` in async tests

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> KcoordServer:
        """Start on the port of the previous start (the first binds port 0), recovering the data dir."""
        if self.running:
            return self
        config = self._config
        if self.port:  # clients reconnect to the address they bootstrapped from
            config = build_config(self.settings, self.data_dir, HostPort(LOOPBACK, self.port))
        thread = ServerThread(config, self.logs)
        self.port = thread.start().port
        self._thread = thread
        self._request_mark = 0
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.running

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def app(self) -> App:
        """The running `App` (for what the controls do not cover)."""
        if self._thread is None or self._thread.app is None:
            raise RuntimeError("the kcoord server is not running (killed or stopped: call restart())")
        return self._thread.app

    def stop(self) -> None:
        """A clean shutdown: in-flight requests answered, the log fsynced and snapshotted."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop("shutdown")

    def restart(self) -> None:
        """Stop cleanly (if running) and start again on the same port and data directory: whatever
        was durable is back, connections are dropped and clients reconnect."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """Crash: what was not yet written is lost, as after kill -9 (`App.abandon()`); the server
        stays down until `restart()`."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop("kill")

    def close(self) -> None:
        self.stop()
        self.logs.detach()

    # -- one test's view -------------------------------------------------------------------------------

    def begin_test(self, after_reset: bool) -> None:
        """Mark where this test's log lines and requests start."""
        self._log_mark = self.logs.count
        if after_reset or not self.running:
            self._request_mark = 0
            return
        entries = self._control(lambda c: c.requests(since=self._request_mark))
        self._request_mark = max((int(e["seq"]) for e in entries), default=self._request_mark)

    def log_lines(self, since: int | None = None) -> list[str]:
        """The server's log lines since this test started (or since line number `since`)."""
        return self.logs.since(self._log_mark if since is None else since)

    # -- the test controls -----------------------------------------------------------------------------

    def _control(self, call: Callable[[Any], Coroutine[Any, Any, Json]]) -> Json:
        controls = self._controls()
        thread = self._thread
        assert thread is not None
        return thread.call(lambda: call(controls), CALL_TIMEOUT_S)

    def _controls(self) -> Any:
        controls = getattr(self.app, "controls", None)
        if controls is None:
            raise RuntimeError("this kcoord has no test controls (App.controls)")
        return controls

    def reset(self) -> float:
        """Everything gone (topics, records, groups, offsets, producer ids, transactions, faults, the
        request log, the clock skew), settings back to the start's; connections stay. Milliseconds."""
        result = self._control(lambda c: c.reset())
        self._request_mark = 0
        return float(result["reset_ms"])

    def configure(self, **changes: Any) -> dict[str, Any]:
        """Change runtime settings until the next reset; the settings now in force."""
        return dict(self._control(lambda c: c.configure(**changes)))

    def advance(self, seconds: float) -> dict[str, int]:
        """Move the server's clock forward: what falls due in the window happens now, and only that:
        session, rebalance and transaction timeouts, and the periodic checks (offset and log retention,
        timed-out transactions) whose interval ends inside it. Durable when this returns."""
        return dict(self._control(lambda c: c.advance(seconds)))

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        self._control(lambda c: c.create_topic(name, partitions, None if config is None else dict(config)))

    def records(self, topic: str) -> list[Record]:
        """Every data record of `topic`, in (partition, offset) order; aborted ones flagged."""
        return [Record.from_json(topic, row) for row in self._control(lambda c: c.records(topic))]

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        return committed_map(self._control(lambda c: c.committed(group)))

    def group(self, group_id: str) -> Group | None:
        """The group as DescribeGroups / ConsumerGroupDescribe shows it; None if there is none."""
        try:
            return Group.from_json(self._control(lambda c: c.group(group_id)))
        except ControlError as exc:
            if exc.status == 404:
                return None
            raise

    def wait_stable(self, group_id: str, timeout: float = 10) -> Group:
        """The group once it is Stable (polled); TimeoutError naming the last state seen."""
        deadline = time.monotonic() + timeout
        while True:
            group = self.group(group_id)
            if group is not None and group.state == "Stable":
                return group
            if time.monotonic() >= deadline:
                raise TimeoutError(_not_stable(group_id, group, timeout))
            time.sleep(STABLE_POLL_S)

    def fail(
        self,
        api: str | int,
        error: str | int,
        count: int = 1,
        topic: str | None = None,
        partition: int | None = None,
        group: str | None = None,
    ) -> Fault:
        """The next `count` matching requests are answered with Kafka's `error` (name or code)."""
        return Fault.from_json(self._control(lambda c: c.fail(api, error, count, topic, partition, group)))

    def delay(self, api: str | int, ms: int, count: int = 1) -> Fault:
        return Fault.from_json(self._control(lambda c: c.delay(api, ms, count)))

    def disconnect(self, api: str | int, count: int = 1) -> Fault:
        return Fault.from_json(self._control(lambda c: c.disconnect(api, count)))

    def fired(self) -> list[Fault]:
        """The faults that fired at least once, in the order they first fired."""
        return [Fault.from_json(f) for f in self._control(lambda c: c.fired())]

    def faults(self) -> list[Fault]:
        return [Fault.from_json(f) for f in self._control(lambda c: c.faults())]

    def clear_faults(self) -> None:
        self._control(lambda c: c.clear_faults())

    def requests(self, since: int | None = None) -> list[RequestEntry]:
        """The request log of this test (or after seq `since`)."""
        mark = self._request_mark if since is None else since
        return [RequestEntry.from_json(e) for e in self._control(lambda c: c.requests(since=mark))]

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<KcoordServer {self.bootstrap_servers} {state} data_dir={self.data_dir}>"


def _not_stable(group_id: str, group: Group | None, timeout: float) -> str:
    seen = "no such group" if group is None else f"state {group.state}, {len(group.members)} members"
    return f"group {group_id!r} not Stable after {timeout:g} s ({seen})"
