"""Partition logs on real files: recovery of a torn tail at every byte, a corrupt sealed segment,
segment rolls, retention, DeleteRecords and idempotent producers across a reopen."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kcoord.partition_log import (
    AppendError,
    CorruptSegment,
    DuplicateAppend,
    PartitionConfig,
    PartitionLogs,
    ValidatedAppend,
)
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

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


def _write_rolled(root: Path, batches: int = 4, timestamp: int = NOW) -> list[Path]:
    config = PartitionConfig(segment_bytes=200, index_interval_bytes=1)

    async def write() -> None:
        logs = await open_logs(root)
        for i in range(batches):
            await append(logs, batch(3, timestamp=timestamp + 100 * i), config)
        await logs.close()

    asyncio.run(write())
    segments = sorted((root / "t-0").glob("*.log"))
    assert len(segments) > 1, "segment.bytes rolls the segment"
    return segments


def test_sealed_segments_get_index_files_and_open_from_them(tmp_path: Path) -> None:
    segments = _write_rolled(tmp_path, batches=6)
    for sealed in segments[:-1]:
        assert sealed.with_suffix(".index").stat().st_size % 8 == 0
        assert sealed.with_suffix(".index").stat().st_size > 0
        assert sealed.with_suffix(".timeindex").stat().st_size % 12 == 0
    assert not segments[-1].with_suffix(".index").exists(), "the active segment has none"

    async def reopen() -> None:
        logs = await open_logs(tmp_path)
        plog = logs.ensure("t", 0, PartitionConfig())
        assert [s.dense for s in plog.segments] == [False] * (len(segments) - 1) + [True]
        assert plog.high_watermark == 18
        for offset in range(18):  # every offset is found through the sparse index, whole batches
            result = plog.read(offset, 1)
            assert result is not None
            first = DefaultRecordBatch(result.records)
            assert first.base_offset <= offset <= first.base_offset + 2
        assert plog.offset_for_timestamp(NOW + 250) == (9, NOW + 300)
        assert plog.max_timestamp() == (17, NOW + 502)
        await logs.close()

    asyncio.run(reopen())


def test_a_corrupt_sealed_segment_without_index_files_is_refused(tmp_path: Path) -> None:
    # The process died after the roll, before the index files were written: a full scan checks it.
    segments = _write_rolled(tmp_path)
    segments[0].with_suffix(".index").unlink()
    first = bytearray(segments[0].read_bytes())
    first[-1] ^= 0xFF
    segments[0].write_bytes(bytes(first))
    with pytest.raises(CorruptSegment, match=segments[0].name):
        asyncio.run(open_logs(tmp_path))


def test_index_files_that_do_not_fit_the_segment_are_rebuilt_or_refused(tmp_path: Path) -> None:
    segments = _write_rolled(tmp_path)
    index = segments[0].with_suffix(".index")
    good = index.read_bytes()
    index.write_bytes(good[:-3])  # torn index file: rebuilt from a full scan (default interval)
    asyncio.run(_reopen_and_close(tmp_path))
    rebuilt = index.read_bytes()
    assert rebuilt and len(rebuilt) % 8 == 0 and rebuilt[:8] == good[:8]
    data = segments[0].read_bytes()
    segments[0].write_bytes(data[:-5])  # the segment lost its end: the index no longer fits
    with pytest.raises(CorruptSegment, match=segments[0].name):
        asyncio.run(open_logs(tmp_path))


async def _reopen_and_close(root: Path) -> None:
    logs = await open_logs(root)
    await logs.close()


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


def test_producer_state_in_sealed_segments_survives_a_reopen(tmp_path: Path) -> None:
    config = PartitionConfig(segment_bytes=200)

    async def scenario() -> None:
        logs = await open_logs(tmp_path)
        batches = [batch(3, producer=(5, 0, 3 * i)) for i in range(5)]
        for data in batches:
            await append(logs, data, config)
        await logs.close()
        logs = await open_logs(tmp_path)
        plog = logs.ensure("t", 0, config)
        assert sum(not s.dense for s in plog.segments) >= 2, "the producer's batches are in sealed segments"
        assert plog.validate(batches[1], NOW) == DuplicateAppend(3)
        assert plog.validate(batches[0], NOW) == DuplicateAppend(0)
        await logs.close()

    asyncio.run(scenario())


def test_a_failed_write_that_cannot_be_cut_back_is_fatal(tmp_path: Path) -> None:
    """EBADF on write, then EINVAL on the truncate-back (a read-only fd): the file's end is unknown,
    so nothing is acknowledged, now or later (kcoord/storage/faults.py). Transient faults (ENOSPC, write
    EIO) are exercised with real file systems in tests/faults."""

    async def scenario() -> None:
        logs = await open_logs(tmp_path)
        assert await append(logs, batch(2)) == 0
        plog = logs.ensure("t", 0, PartitionConfig())
        fd = plog.segments[-1].fd
        os.close(fd)  # the next write hits EBADF: a real OSError from the kernel
        plog.segments[-1].fd = os.open(os.devnull, os.O_RDONLY)
        checked = plog.validate(batch(2), NOW)
        assert isinstance(checked, ValidatedAppend)
        with pytest.raises(StorageFault, match=r"truncate-back of .* failed") as failed:
            await plog.append(checked, NOW)
        assert failed.value.fatal and logs.policy.fatal is failed.value
        assert plog.high_watermark == plog.log_end_offset == 2
        os.close(plog.segments[-1].fd)
        plog.segments[-1].fd = -1
        with pytest.raises(StorageFault, match="truncate-back"):
            await append(logs, batch(1))
        assert plog.high_watermark == plog.log_end_offset == 2
        await logs.close()

    asyncio.run(scenario())


def test_a_read_with_max_offset_stops_after_the_first_batch_reaching_it(tmp_path: Path) -> None:
    """A share fetch reads no further than acquisition can reach (kcoord/broker/share/fetch.py): batches
    0-3, 4-7, 8-11, 12-15; reads from 5 end with the batch holding `max_offset`, at least one batch."""

    async def run() -> list[int]:
        logs = await open_logs(tmp_path)
        for _ in range(4):
            await append(logs, batch(4))
        plog = logs.ensure("t", 0, PartitionConfig())
        ends = []
        for max_offset in (None, 3, 5, 8, 11, 12, 100):
            result = plog.read(5, 1 << 20, max_offset=max_offset)
            assert result is not None
            last = [b.last_offset_delta + b.base_offset for b in _batches(result.records)]
            ends.append(last[-1])
        await logs.close()
        return ends

    assert asyncio.run(run()) == [15, 7, 7, 11, 11, 15, 15]


def _batches(records: bytes) -> list[DefaultRecordBatch]:
    out, pos = [], 0
    while pos < len(records):
        size = int.from_bytes(records[pos + 8 : pos + 12], "big") + 12
        out.append(DefaultRecordBatch(records[pos : pos + size]))
        pos += size
    return out
