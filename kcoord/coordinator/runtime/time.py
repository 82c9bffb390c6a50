"""Time as a coordinator tenant sees it: an injected clock and keyed timers, never the wall clock.

Every tenant (groups, transactions) names these ports; the server wires `broker.timers.SystemClock`
(epoch milliseconds, because commit timestamps and the GroupMetadata `current_state_timestamp` are
persisted and compared across restarts) and `AsyncioTimers`; tests and benchmarks use
`runtime.fake_time.FakeClock` / `FakeTimers` and move time by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "KeyedTimers"]


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int:
        """The current time, in milliseconds since the Unix epoch."""
        ...


class KeyedTimers(Protocol):
    """One-shot timers identified by key (the server implements it with `loop.call_later`).

    Every key says what its timer is for (Kafka's terms, so grep works across both codebases: the
    group tenant's keys are in `coordinator.groups.timers`). A callback runs on the same thread/loop
    as requests (the server posts it back to its event loop), so it may change state directly.
    """

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` after `delay_ms` (>= 0); replaces any timer already scheduled under `key`."""
        ...

    def cancel(self, key: str) -> None:
        """Forget the timer under `key`, if any (unknown: a no-op); a cancelled callback never runs."""
        ...
