"""Partition logs on real files: recovery of a torn tail at every byte, a corrupt sealed segment,
segment rolls, retention, DeleteRecords and idempotent producers across a reopen."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from partition_log import (
    AppendError,
    CorruptSegment,
    DuplicateAppend,
    PartitionConfig,
    PartitionLogs,
    ValidatedAppend,
)
from protocol.errors import ErrorCode

NOW = 1_700_000_000_000


def batch(count: int, producer: tuple[int, int, int] = (-1, -1, -1), timestamp: int = NOW) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, *producer, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, timestamp + i, b"k", b"v%d" % i, [])
    return bytes(builder.build())


async def open_logs(root: Path) -> PartitionLogs:
    return await PartitionLogs.open(root, fsync="always", now_ms=lambda: NOW)


async def append(logs: PartitionLogs, data: bytes, config: PartitionConfig | None = None) -> int:
    plog = logs.ensure("t", 0, config or PartitionConfig())
    checked = plog.validate(data, NOW)
    assert isinstance(checked, ValidatedAppend), checked
    return (await plog.append(checked, NOW)).base_offset


def test_a_torn_tail_is_cut_at_every_byte(tmp_path: Path) -> None:
    async def write() -> Path:
        logs = await open_logs(tmp_path / "full")
        for _ in range(3):
            await append(logs, batch(4))
        await logs.close()
        return next((tmp_path / "full" / "t-0").glob("*.log"))

    segment = asyncio.run(write())
    data = segment.read_bytes()
    whole = len(data) // 3
    for cut in range(2 * whole, len(data) + 1, 7):  # every 7th byte of the last batch, and the end
        root = tmp_path / f"cut-{cut}"
        (root / "t-0").mkdir(parents=True)
        (root / "t-0" / segment.name).write_bytes(data[:cut])

        async def reopen(root: Path = root) -> int:
            logs = await open_logs(root)
            end = logs.ensure("t", 0, PartitionConfig()).high_watermark
            await logs.close()
            return end

        assert asyncio.run(reopen()) == (12 if cut == len(data) else 8)
        assert (root / "t-0" / segment.name).stat().st_size == (len(data) if cut == len(data) else 2 * whole)


def test_a_corrupt_sealed_segment_is_refused(tmp_path: Path) -> None:
    config = PartitionConfig(segment_bytes=200)

    async def write() -> None:
        logs = await open_logs(tmp_path)
        for _ in range(4):
            await append(logs, batch(3), config)
        await logs.close()

    asyncio.run(write())
    segments = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(segments) > 1, "segment.bytes rolls the segment"
    first = bytearray(segments[0].read_bytes())
    first[-1] ^= 0xFF
    segments[0].write_bytes(bytes(first))
    with pytest.raises(CorruptSegment, match=segments[0].name):
        asyncio.run(open_logs(tmp_path))


def test_delete_records_and_retention_survive_a_reopen(tmp_path: Path) -> None:
    config = PartitionConfig(segment_bytes=200, retention_ms=1000)

    async def scenario() -> tuple[int, int, int]:
        logs = await open_logs(tmp_path)
        for _ in range(5):
            await append(logs, batch(3, timestamp=NOW - 10_000), config)
        plog = logs.ensure("t", 0, config)
        assert await plog.delete_records(4) == 4
        assert plog.read(3, 1 << 20) is None and plog.read(4, 1 << 20) is not None
        logs.enforce_retention()  # every sealed segment is older than retention.ms
        await asyncio.sleep(0.2)
        after_retention = plog.log_start_offset
        await logs.close()
        reopened = await open_logs(tmp_path)
        again = reopened.ensure("t", 0, config)
        result = (after_retention, again.log_start_offset, again.high_watermark)
        await reopened.close()
        return result

    after_retention, start, end = asyncio.run(scenario())
    assert after_retention > 4 and start == after_retention and end == 15


def test_idempotent_duplicates_gaps_and_epochs_across_a_reopen(tmp_path: Path) -> None:
    async def scenario() -> None:
        logs = await open_logs(tmp_path)
        first = batch(2, producer=(7, 0, 0))
        assert await append(logs, first) == 0
        assert await append(logs, batch(2, producer=(7, 0, 2))) == 2
        await logs.close()
        logs = await open_logs(tmp_path)
        plog = logs.ensure("t", 0, PartitionConfig())
        assert plog.validate(first, NOW) == DuplicateAppend(0)  # a retry across the restart
        gap = plog.validate(batch(1, producer=(7, 0, 9)), NOW)
        assert isinstance(gap, AppendError) and gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        stale = plog.validate(batch(1, producer=(8, 0, 0)), NOW)
        assert isinstance(stale, ValidatedAppend)  # another producer starts at 0
        fenced = logs.ensure("t", 0, PartitionConfig())
        await append(logs, batch(1, producer=(7, 1, 0)))  # epoch 1 starts over at sequence 0
        old = fenced.validate(batch(1, producer=(7, 0, 4)), NOW)
        assert isinstance(old, AppendError) and old.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        await logs.close()

    asyncio.run(scenario())


def test_a_failed_write_acknowledges_nothing_and_appends_resume(tmp_path: Path) -> None:
    async def scenario() -> None:
        logs = await open_logs(tmp_path)
        assert await append(logs, batch(2)) == 0
        plog = logs.ensure("t", 0, PartitionConfig())
        fd = plog.segments[-1].fd
        os.close(fd)  # the next write hits EBADF: a real OSError from the kernel
        plog.segments[-1].fd = os.open(os.devnull, os.O_RDONLY)
        checked = plog.validate(batch(2), NOW)
        assert isinstance(checked, ValidatedAppend)
        with pytest.raises(Exception, match="write failed"):
            await plog.append(checked, NOW)
        assert plog.high_watermark == plog.log_end_offset == 2
        os.close(plog.segments[-1].fd)
        plog.segments[-1].fd = -1
        assert await append(logs, batch(1)) == 2
        await logs.close()

    asyncio.run(scenario())
