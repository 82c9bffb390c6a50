"""Time as a coordinator tenant sees it: an injected clock and keyed timers, never the wall clock.

The same structural ports the group logic uses (`coordinator.groups.clock.Clock`,
`coordinator.groups.timers.KeyedTimers`), stated here so a tenant that must not import the group
package (the transaction coordinator) can name them; the group's `FakeClock`/`FakeTimers` and the
server's timers satisfy both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "KeyedTimers"]


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int: ...


class KeyedTimers(Protocol):
    """One-shot timers identified by key; scheduling a key that exists replaces it."""

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None: ...

    def cancel(self, key: str) -> None: ...
