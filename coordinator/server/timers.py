"""The asyncio side of the group logic's time: a wall clock and `KeyedTimers` over `loop.call_later`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

__all__ = ["AsyncioTimers", "SystemClock"]

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
    """`coordinator.groups.timers.KeyedTimers` on an event loop: one `TimerHandle` per key.

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
