"""Fixtures for the share-partition tenant: synchronous, fake clock and timers, an in-memory log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest

from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.share_partitions import (
    AcquiredRange,
    LogBounds,
    RecordState,
    SharePartitions,
    ShareSettings,
)
from kcoord.protocol.errors import ErrorCode
from tests.unit.fakes import MemoryRecordLog

TOPIC = UUID(int=0x5A)
GROUP = "g"
LOCK_MS = 30_000

SETTINGS = ShareSettings(
    record_lock_duration_ms=LOCK_MS,
    delivery_count_limit=5,
    partition_max_record_locks=2000,
    auto_offset_reset="earliest",
    isolation_level=0,
)


def log_batches(end: int, size: int = 5, start: int = 0) -> list[tuple[int, int]]:
    """The topic partition's record batches start..end-1, `size` records each."""
    return [(base, min(base + size, end) - 1) for base in range(start, end, size)]


def bounds(log_start: int = 0, high_watermark: int = 100, times: dict[int, int] | None = None) -> LogBounds:
    """The log as the edge would describe it; `times` maps offset -> record timestamp."""
    stamps = times or {}

    def offset_for_timestamp(ts: int) -> int | None:
        return min((o for o, t in stamps.items() if t >= ts), default=None)

    return LogBounds(log_start, high_watermark, high_watermark, offset_for_timestamp)


@dataclass
class Share:
    """Drives the tenant for one share partition (GROUP, TOPIC, 0) as the edge would."""

    clock: FakeClock
    timers: FakeTimers
    log: MemoryRecordLog
    tenant: SharePartitions
    batches: list[tuple[int, int]] = field(default_factory=lambda: log_batches(100))
    settings: ShareSettings = SETTINGS
    partition: int = 0
    changes: list[tuple[str, UUID, int]] = field(default_factory=list)

    def next_offset(self, log_bounds: LogBounds | None = None) -> int | None:
        return self.tenant.next_fetch_offset(
            GROUP, TOPIC, self.partition, self.settings, log_bounds or bounds()
        )

    def fetch(
        self,
        member: str,
        max_records: int = 500,
        *,
        batch_size: int = 500,
        strict: bool = False,
        skip: Callable[[int], bool] | None = None,
        log_bounds: LogBounds | None = None,
    ) -> list[AcquiredRange] | None:
        """next_fetch_offset, the log read from there (whole batches, as Fetch reads), then acquire."""
        offset = self.next_offset(log_bounds)
        if offset is None:
            return None
        read = [b for b in self.batches if b[1] >= offset]
        return self.tenant.acquire(
            GROUP, member, TOPIC, self.partition, self.settings, read, max_records, batch_size, strict, skip
        )

    def ack(self, member: str, *batches: tuple[int, int, Sequence[int]]) -> ErrorCode | None:
        """Acknowledge; the answer, or None when it is not answered yet (the write is held)."""
        answers: list[ErrorCode] = []
        self.tenant.acknowledge(
            GROUP, member, TOPIC, self.partition, list(batches), self.settings, answers.append
        )
        assert len(answers) <= 1
        return answers[0] if answers else None

    def states(self) -> dict[int, tuple[RecordState, int, str | None]]:
        """Offset -> (state, delivery count, member) from the start offset through the window."""
        view = self.tenant.describe(GROUP, TOPIC, self.partition)
        assert view is not None
        return {
            o: (r.state, r.delivery_count, r.member_id)
            for r in view.records
            for o in range(r.first_offset, r.last_offset + 1)
        }

    @property
    def start(self) -> int | None:
        return self.tenant.start_offset(GROUP, TOPIC, self.partition)

    def records(self) -> list[Any]:
        return list(self.log.records)


def make_share(snapshot_every: int = 500, **kwargs: Any) -> Share:
    clock = FakeClock()
    timers = FakeTimers(clock)
    log = MemoryRecordLog()
    tenant = SharePartitions(log, clock, timers, snapshot_every=snapshot_every)  # type: ignore[arg-type]
    tenant.on_loaded()
    share = Share(clock, timers, log, tenant, **kwargs)
    tenant.on_change(lambda *key: share.changes.append(key))
    return share


@pytest.fixture
def share() -> Share:
    return make_share()
