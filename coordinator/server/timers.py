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


class AsyncioTimers:
    """`coordinator.groups.timers.KeyedTimers` on an event loop: one `TimerHandle` per key.

    Scheduling an existing key replaces it; a fired or cancelled key is forgotten, so the dict holds
    only live timers (10,000 members = 10,000 session handles, nothing more).
    """

    __slots__ = ("_handles", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        old = self._handles.get(key)
        if old is not None:
            old.cancel()
        self._handles[key] = self._loop.call_later(max(delay_ms, 0) / 1000.0, self._fire, key, callback)

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __len__(self) -> int:
        return len(self._handles)

    def _fire(self, key: str, callback: Callable[[], None]) -> None:
        del self._handles[key]
        try:
            callback()
        except Exception:
            # A failing timer callback is a bug in the group logic; log it with the key so it can be
            # found, and keep serving the other groups (the loop would only print it otherwise).
            log.exception("timer callback failed key=%s", key)
