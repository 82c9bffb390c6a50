"""In-memory time for tests and benchmarks: a `FakeClock` moved by hand and `FakeTimers` driven by it.

They satisfy the runtime's ports (`coordinator.runtime.time.Clock`, `KeyedTimers`) for every tenant;
the server wires `broker.timers.SystemClock` and `AsyncioTimers` instead.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["FakeClock", "FakeTimers"]


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


class FakeTimers:
    """`KeyedTimers` driven by a `FakeClock`: `advance(ms)` fires due callbacks in deadline order.

    Ties fire in scheduling order. A callback that schedules another timer due within the advanced
    window sees it fire in the same `advance` call, at its own deadline (the clock is moved to each
    deadline before its callback runs).
    """

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock
        self._seq = 0
        self._timers: dict[str, tuple[int, int, Callable[[], None]]] = {}

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        self._seq += 1
        self._timers[key] = (self._clock.now_ms() + max(delay_ms, 0), self._seq, callback)

    def cancel(self, key: str) -> None:
        self._timers.pop(key, None)

    def advance(self, ms: int) -> None:
        """Move the clock forward by `ms`, firing every timer that falls due on the way."""
        target = self._clock.now_ms() + ms
        while True:
            due = [
                (deadline, seq, key) for key, (deadline, seq, _) in self._timers.items() if deadline <= target
            ]
            if not due:
                break
            deadline, _, key = min(due)
            _, _, callback = self._timers.pop(key)
            self._clock.set(max(deadline, self._clock.now_ms()))
            callback()
        self._clock.set(target)

    def deadline(self, key: str) -> int | None:
        """The absolute deadline (ms) of `key`, or None if it is not scheduled."""
        entry = self._timers.get(key)
        return entry[0] if entry is not None else None

    def keys(self) -> list[str]:
        """Scheduled keys, soonest first."""
        return [k for k, _ in sorted(self._timers.items(), key=lambda kv: (kv[1][0], kv[1][1]))]

    def __contains__(self, key: object) -> bool:
        return key in self._timers
