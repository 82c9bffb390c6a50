"""kcoord's `App` in the test process: its own thread, its own event loop, its log lines kept.

The test's code (sync clients, or an async test's own loop) never shares the server's loop, so a
blocking kafka-python call cannot stall the server and the server needs nothing from the test. Every
start is a new thread and a new loop (`asyncio.Runner`, uvloop when installed): a stop, clean or a
crash, ends with the loop's tasks cancelled, so nothing of one incarnation leaks into the next.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

from kcoord.wiring.app import App
from kcoord.wiring.config import Config, HostPort

__all__ = ["LogLines", "ServerThread"]

T = TypeVar("T")
StopMode = Literal["shutdown", "kill"]
START_TIMEOUT_S = 30.0
# The server's loggers: kcoord.* and the group logic's coordinator.groups*
SERVER_LOGGERS = ("kcoord", "coordinator.groups")
LOG_LINES_KEPT = 20_000


class LogLines(logging.Handler):
    """The server's log lines (only those logged on its threads), numbered so a test can ask for the
    lines since it started. A bounded ring: a long session keeps the newest."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(
            logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s %(message)s", "%H:%M:%S")
        )
        self.threads: set[int] = set()
        self._lines: collections.deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)
        self.count = 0  # lines ever logged: a mark for since()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread not in self.threads:
            return
        self._lines.append(self.format(record))
        self.count += 1

    def since(self, mark: int) -> list[str]:
        self.acquire()  # emit() appends on the server's thread, under the same lock
        try:
            lines = list(self._lines)
            kept = min(self.count - mark, len(lines))
        finally:
            self.release()
        return lines[len(lines) - kept :] if kept > 0 else []

    def attach(self, level: str) -> None:
        for name in SERVER_LOGGERS:
            logger = logging.getLogger(name)
            logger.addHandler(self)  # propagation untouched: pytest's own log capture sees them too
            if logger.level == logging.NOTSET or logger.level > logging.getLevelName(level):
                logger.setLevel(level)

    def detach(self) -> None:
        for name in SERVER_LOGGERS:
            logging.getLogger(name).removeHandler(self)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


class ServerThread:
    """One incarnation of the server: `start()` returns once it listens, `stop(mode)` ends it."""

    def __init__(self, config: Config, logs: LogLines) -> None:
        self.config = config
        self._logs = logs
        self.loop: asyncio.AbstractEventLoop | None = None
        self.app: App | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Future[StopMode] | None = None
        self._thread = threading.Thread(target=self._run, name="kcoord-server", daemon=True)

    def start(self) -> HostPort:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError(f"kcoord did not start within {START_TIMEOUT_S:g} s")
        if self._error is not None:
            self._thread.join()
            raise self._error
        assert self.app is not None and self.app.bound is not None
        return self.app.bound

    def _run(self) -> None:
        self._logs.threads.add(threading.get_ident())
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                runner.run(self._main())
        finally:
            self._logs.threads.discard(threading.get_ident())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = self.loop.create_future()
        app = App(self.config)
        try:
            await app.startup()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            await app.shutdown()
            return
        self.app = app
        self._ready.set()
        if await self._stop == "kill":
            # the crash emulation: nothing flushed, fsynced or snapshotted, the lock released
            await app.abandon()
        else:
            await app.shutdown()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and self.app is not None

    def call(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float) -> T:
        """Run `make()` on the server's loop from another thread and wait for its result."""
        return self.submit(make).result(timeout)

    def submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        if self.loop is None or not self.running:
            raise RuntimeError("the kcoord server is not running (killed or stopped: call restart())")
        return asyncio.run_coroutine_threadsafe(make(), self.loop)

    def stop(self, mode: StopMode, timeout: float = 30.0) -> None:
        """Shut down cleanly, or crash (`kill`); returns when the thread has ended."""
        if self.loop is not None and self._stop is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(_resolve, self._stop, mode)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"kcoord did not stop within {timeout:g} s")
        self.app = None


def _resolve(stop: asyncio.Future[StopMode], mode: StopMode) -> None:
    if not stop.done():
        stop.set_result(mode)
