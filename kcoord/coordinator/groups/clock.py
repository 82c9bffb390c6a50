"""Time for the group logic: an injected `Clock`, never the wall clock.

The server wires a real clock (epoch milliseconds, because commit timestamps and the
GroupMetadata `current_state_timestamp` are persisted and compared across restarts);
tests use `FakeClock` and move it by hand.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Clock", "FakeClock"]


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int:
        """The current time, in milliseconds since the Unix epoch."""
        ...


class FakeClock:
    """A clock that only moves when told to (tests, benchmarks)."""

    __slots__ = ("_now_ms",)

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> None:
        """Move time forward by `ms` (never backwards)."""
        if ms < 0:
            raise ValueError(f"cannot move a clock backwards by {ms} ms")
        self._now_ms += ms

    def set(self, now_ms: int) -> None:
        """Jump to `now_ms` (must not be in the past)."""
        if now_ms < self._now_ms:
            raise ValueError(f"cannot move a clock backwards to {now_ms}")
        self._now_ms = now_ms
