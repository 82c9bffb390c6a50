"""The asyncio side of the group logic's time: a wall clock and `KeyedTimers` over `loop.call_later`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

__all__ = ["AsyncioTimers", "MovableClock", "MovableTimers", "SystemClock"]

log = logging.getLogger("kcoord.timers")


class SystemClock:
    """Epoch milliseconds: commit timestamps and state timestamps are persisted across restarts."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class _Timer:
    __slots__ = ("callback", "deadline", "handle", "when")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline  # when the callback is due (loop time)
        self.callback = callback
        self.when = deadline  # when the armed handle fires (<= deadline)
        self.handle: asyncio.TimerHandle | None = None


class AsyncioTimers:
    """`coordinator.runtime.KeyedTimers` on an event loop: one `TimerHandle` per key.

    Scheduling an existing key replaces it; a fired or cancelled key is forgotten, so the dict holds
    only live timers (10,000 members = 10,000 session handles, nothing more).

    Postponing is lazy: every heartbeat moves its member's session deadline later, and cancelling and
    re-creating a `TimerHandle` for each one (a heap push, and a cancelled entry left in the loop's
    heap) was the largest cost of a heartbeat after the socket write. So a later deadline only updates
    the key's deadline and callback; when the armed handle fires early it re-arms once for the time
    left. A session timer is re-armed about once per session timeout instead of once per heartbeat.
    """

    __slots__ = ("_loop", "_timers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._timers: dict[str, _Timer] = {}

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        deadline = self._loop.time() + max(delay_ms, 0) / 1000.0
        timer = self._timers.get(key)
        if timer is not None:
            if timer.when <= deadline:  # the armed handle fires first and re-arms: just move the deadline
                timer.deadline, timer.callback = deadline, callback
                return
            assert timer.handle is not None
            timer.handle.cancel()
        timer = self._timers[key] = _Timer(deadline, callback)
        timer.handle = self._loop.call_at(deadline, self._fire, key, timer)

    def cancel(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None and timer.handle is not None:
            timer.handle.cancel()

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            if timer.handle is not None:
                timer.handle.cancel()
        self._timers.clear()

    def __len__(self) -> int:
        return len(self._timers)

    def _fire(self, key: str, timer: _Timer) -> None:
        if self._timers.get(key) is not timer:
            return  # replaced or cancelled after this handle was armed
        if timer.deadline - self._loop.time() > 0.001:  # postponed meanwhile: wait for the rest
            timer.when = timer.deadline
            timer.handle = self._loop.call_at(timer.deadline, self._fire, key, timer)
            return
        del self._timers[key]
        try:
            timer.callback()
        except Exception:
            # A failing timer callback is a bug in the group logic; log it with the key so it can be
            # found, and keep serving the other groups (the loop would only print it otherwise).
            log.exception("timer callback failed key=%s", key)


class MovableClock:
    """The test controls' clock (`--enable-test-controls` only): the wall clock plus a skew that
    `advance()` grows. The plain `SystemClock` stays on the request path otherwise."""

    __slots__ = ("skew_s",)

    def __init__(self) -> None:
        self.skew_s = 0.0

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + int(self.skew_s * 1000)


# advance() fires at most this many timers (a timer that re-arms itself with delay 0 cannot hang it).
MAX_FIRED_PER_ADVANCE = 100_000


class MovableTimers(AsyncioTimers):
    """`AsyncioTimers` whose deadlines are on the movable clock: loop time + the clock's skew.

    `advance(seconds)` fires every timer due inside the window in deadline order, moving the clock to
    each deadline first (a callback that schedules a new timer schedules it from its own moment, as it
    would have run then), then re-arms the rest at their deadlines on the new clock.
    """

    __slots__ = ("clock",)

    def __init__(self, loop: asyncio.AbstractEventLoop, clock: MovableClock) -> None:
        super().__init__(loop)
        self.clock = clock

    def _now(self) -> float:
        return self._loop.time() + self.clock.skew_s

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        deadline = self._now() + max(delay_ms, 0) / 1000.0
        timer = self._timers.get(key)
        if timer is not None:
            if timer.when <= deadline:
                timer.deadline, timer.callback = deadline, callback
                return
            assert timer.handle is not None
            timer.handle.cancel()
        timer = self._timers[key] = _Timer(deadline, callback)
        self._arm(key, timer)

    def _arm(self, key: str, timer: _Timer) -> None:
        timer.when = timer.deadline
        timer.handle = self._loop.call_at(timer.deadline - self.clock.skew_s, self._fire, key, timer)

    def _fire(self, key: str, timer: _Timer) -> None:
        if self._timers.get(key) is not timer:
            return
        if timer.deadline - self._now() > 0.001:
            self._arm(key, timer)
            return
        del self._timers[key]
        _run(key, timer)

    def advance(self, seconds: float) -> int:
        """Move the clock `seconds` forward, firing what falls due on the way; how many fired."""
        target = self._now() + seconds
        fired = 0
        while fired < MAX_FIRED_PER_ADVANCE:
            due = min(
                ((t.deadline, key) for key, t in self._timers.items() if t.deadline <= target), default=None
            )
            if due is None:
                break
            deadline, key = due
            self.clock.skew_s += max(deadline - self._now(), 0.0)
            timer = self._timers.pop(key)
            if timer.handle is not None:
                timer.handle.cancel()
            _run(key, timer)
            fired += 1
        self.clock.skew_s += max(target - self._now(), 0.0)
        for key, timer in self._timers.items():
            if timer.handle is not None:
                timer.handle.cancel()
            self._arm(key, timer)
        return fired


def _run(key: str, timer: _Timer) -> None:
    try:
        timer.callback()
    except Exception:
        log.exception("timer callback failed key=%s", key)
