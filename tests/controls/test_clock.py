"""The movable clock and timers: advance() fires what falls due in deadline order, each at its moment."""

from __future__ import annotations

import asyncio

from kcoord.broker.context import DelayedResponses
from kcoord.broker.timers import MovableClock, MovableTimers


def _run(test: object) -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(test)  # type: ignore[arg-type]
    finally:
        loop.close()


def test_advance_fires_due_timers_in_deadline_order_at_their_own_moment() -> None:
    async def scenario() -> None:
        clock = MovableClock()
        timers = MovableTimers(asyncio.get_running_loop(), clock)
        start = clock.now_ms()
        fired: list[tuple[str, int]] = []

        def note(name: str) -> None:
            fired.append((name, clock.now_ms() - start))

        def first() -> None:
            note("a")
            timers.schedule("d", 3_000, lambda: note("d"))  # from a's moment (5 s): due at 8 s

        timers.schedule("c", 20_000, lambda: note("c"))
        timers.schedule("b", 10_000, lambda: note("b"))
        timers.schedule("a", 5_000, first)
        assert timers.advance(12) == 3
        assert [name for name, _ in fired] == ["a", "d", "b"]
        for (_, at), expected in zip(fired, (5_000, 8_000, 10_000), strict=True):
            assert expected - 2 <= at < expected + 200  # loop time and wall time: 1 ms apart at most
        assert 11_998 <= clock.now_ms() - start < 12_200
        assert len(timers) == 1  # c, re-armed on the moved clock
        assert timers.advance(7) == 0
        assert timers.advance(1.5) == 1 and fired[-1][0] == "c"
        assert len(timers) == 0

    _run(scenario())


def test_a_timer_left_pending_fires_on_the_real_loop_at_its_moved_deadline() -> None:
    async def scenario() -> None:
        clock = MovableClock()
        timers = MovableTimers(asyncio.get_running_loop(), clock)
        done = asyncio.Event()
        timers.schedule("late", 10_050, done.set)
        timers.advance(10)  # 50 ms left: the loop fires it, not advance()
        assert not done.is_set()
        await asyncio.wait_for(done.wait(), 2)

    _run(scenario())


def test_postponed_and_cancelled_timers_follow_the_moved_clock() -> None:
    async def scenario() -> None:
        clock = MovableClock()
        timers = MovableTimers(asyncio.get_running_loop(), clock)
        fired: list[str] = []
        timers.schedule("session", 1_000, lambda: fired.append("early"))
        timers.schedule("session", 30_000, lambda: fired.append("session"))  # a heartbeat postpones it
        timers.schedule("gone", 500, lambda: fired.append("gone"))
        timers.cancel("gone")
        assert timers.advance(29) == 0 and fired == []
        assert timers.advance(1) == 1 and fired == ["session"]

    _run(scenario())


def test_delayed_responses_due_inside_the_window_fire() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        delayed = DelayedResponses(loop)
        fired: list[int] = []
        delayed.add(500, lambda: fired.append(500))
        delayed.add(100, lambda: fired.append(100))
        delayed.add(5_000, lambda: fired.append(5_000))
        assert delayed.fire_due(loop.time() + 1.0) == 2
        assert fired == [100, 500] and len(delayed) == 1
        delayed.fire_all()

    _run(scenario())
