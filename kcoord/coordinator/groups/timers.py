"""Keyed timers: the only way the group logic waits.

Every timer has a string key that says what it is for (Kafka's terms, so grep works across both
codebases). Scheduling a key that exists replaces it; cancelling an unknown key is a no-op. A
callback runs on the same thread/loop as requests (the server posts it back to its event loop), so
it may change group state directly.

Keys (see `docs/kafka-group-protocol.md` §6):

* ``session:{group_id}:{member_id}`` — member session / new-member join timeout (Kafka's heartbeat key)
* ``pending:{group_id}:{member_id}`` — member id handed out with MEMBER_ID_REQUIRED, not yet rejoined
* ``join:{group_id}`` — delayed-join purgatory: initial rebalance delay or rebalance timeout
* ``sync:{group_id}`` — pending-sync timeout: members that got a JoinGroup answer but never synced
* ``expire-offsets`` — the periodic offset-retention check
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kcoord.coordinator.groups.clock import FakeClock

__all__ = [
    "EXPIRE_OFFSETS_KEY",
    "FakeTimers",
    "KeyedTimers",
    "join_key",
    "pending_key",
    "session_key",
    "sync_key",
]

EXPIRE_OFFSETS_KEY = "expire-offsets"


def session_key(group_id: str, member_id: str) -> str:
    return f"session:{group_id}:{member_id}"


def pending_key(group_id: str, member_id: str) -> str:
    return f"pending:{group_id}:{member_id}"


def join_key(group_id: str) -> str:
    return f"join:{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync:{group_id}"


class KeyedTimers(Protocol):
    """One-shot timers identified by key (the server implements it with `loop.call_later`)."""

    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` after `delay_ms` (>= 0); replaces any timer already scheduled under `key`."""
        ...

    def cancel(self, key: str) -> None:
        """Forget the timer under `key`, if any. A cancelled callback never runs."""
        ...


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
