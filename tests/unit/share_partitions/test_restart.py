"""The share partitions' state through a restart of the real data directory: `open_state` builds the
tenant, the acknowledgement is written to the coordinator log, and the next `open_state` replays it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kcoord.broker.timers import AsyncioTimers, SystemClock
from kcoord.coordinator.share_partitions import AcquiredRange, RecordState, SharePartitions
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault
from kcoord.wiring.app_state import State, close_state, open_state, stop_state
from kcoord.wiring.backends import Services
from kcoord.wiring.config import Config
from kcoord.wiring.local_backends import LocalBackends
from tests.unit.share_partitions.conftest import GROUP, SETTINGS, TOPIC, bounds, log_batches

BATCHES = log_batches(100)


def _fatal(fault: StorageFault) -> None:
    raise AssertionError(f"no storage fault expected: {fault}")


async def _open(config: Config) -> tuple[State, SharePartitions]:
    services = Services(SystemClock(), AsyncioTimers(asyncio.get_running_loop()), None, _fatal)
    state = await open_state(config, LocalBackends(config, None), services)
    assert state.share_partitions is not None
    return state, state.share_partitions


async def _close(state: State) -> None:
    stop_state(state)
    await close_state(state)


async def _acknowledge(shares: SharePartitions, batches: list[tuple[int, int, list[int]]]) -> ErrorCode:
    answered: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    shares.acknowledge(GROUP, "m1", TOPIC, 0, batches, SETTINGS, answered.set_result)
    return await asyncio.wait_for(answered, 10)


async def test_acknowledged_and_released_records_survive_a_restart(tmp_path: Path) -> None:
    config = Config(data_dir=tmp_path, fsync="always")
    state, shares = await _open(config)
    try:
        assert shares.next_fetch_offset(GROUP, TOPIC, 0, SETTINGS, bounds()) == 0
        assert shares.acquire(GROUP, "m1", TOPIC, 0, SETTINGS, BATCHES, 15, 500, False) == [
            AcquiredRange(0, 14, 1)
        ]
        assert await _acknowledge(shares, [(0, 4, [1]), (5, 9, [2])]) is ErrorCode.NONE  # accept, release
    finally:
        await _close(state)

    state, shares = await _open(config)
    try:
        view = shares.describe(GROUP, TOPIC, 0)
        assert view is not None and view.start_offset == 5
        assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in view.records] == [
            (5, 9, RecordState.AVAILABLE, 1)
        ]
        assert shares.next_fetch_offset(GROUP, TOPIC, 0, SETTINGS, bounds()) == 5
        acquired = shares.acquire(GROUP, "m2", TOPIC, 0, SETTINGS, BATCHES[1:], 15, 500, False)
        # 10-14 were acquired but never settled, so never written: new again, that delivery uncounted
        assert acquired == [AcquiredRange(5, 9, 2), AcquiredRange(10, 19, 1)]
    finally:
        await _close(state)


async def test_a_deleted_share_partition_stays_deleted_after_a_restart(tmp_path: Path) -> None:
    config = Config(data_dir=tmp_path, fsync="always")
    state, shares = await _open(config)
    try:
        shares.next_fetch_offset(GROUP, TOPIC, 0, SETTINGS, bounds())
        shares.acquire(GROUP, "m1", TOPIC, 0, SETTINGS, BATCHES, 5, 500, False)
        assert await _acknowledge(shares, [(0, 4, [1])]) is ErrorCode.NONE
        deleted: asyncio.Future[dict[object, ErrorCode]] = asyncio.get_running_loop().create_future()
        shares.delete(GROUP, None, deleted.set_result)
        assert await asyncio.wait_for(deleted, 10) == {(TOPIC, 0): ErrorCode.NONE}
    finally:
        await _close(state)

    state, shares = await _open(config)
    try:
        assert shares.describe(GROUP, TOPIC, 0) is None
    finally:
        await _close(state)
