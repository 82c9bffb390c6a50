"""Storage benchmark (run by hand): `.venv/bin/python -m bench.storage [--dir DIR]`.

Appends/s with fsync=always and group commit for 1, 16 and 256 concurrent appenders of 100-byte
records, the raw fsync latency of the disk (the physical limit), replay speed of a 1,000,000-record
log without a snapshot, restart time with a 100k-live-key snapshot plus a 100k-record tail, and how
long the event loop stalls while a compaction of 1,000,000 records and a 100k-key snapshot run
beside it (the worst gap between 1 ms ticks: what a heartbeat waits for).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from kcoord.storage import Log, LogConfig, Record

VALUE = b"v" * 80  # key ~10 bytes + value 80 + header 28 ~ 100-byte records on disk... payload 100 bytes


def fsync_latency_ms(directory: Path, rounds: int = 200) -> float:
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    started = time.perf_counter()
    for _ in range(rounds):
        os.write(fd, b"x" * 100)
        os.fsync(fd)
    elapsed = time.perf_counter() - started
    os.close(fd)
    path.unlink()
    return elapsed / rounds * 1000


async def appends_per_second(directory: Path, appenders: int, seconds: float = 3.0) -> float:
    log = await Log.open(directory, LogConfig(fsync_policy="always"))
    done = 0
    deadline = time.perf_counter() + seconds

    async def appender(index: int) -> None:
        nonlocal done
        i = 0
        while time.perf_counter() < deadline:
            await log.append([Record(0, b"k%d-%d" % (index, i % 1000), VALUE)])
            done += 1
            i += 1

    started = time.perf_counter()
    await asyncio.gather(*(appender(i) for i in range(appenders)))
    elapsed = time.perf_counter() - started
    await log.close(write_snapshot=False)
    return done / elapsed


async def build_log(directory: Path, records: int, keys: int) -> None:
    log = await Log.open(
        directory,
        LogConfig(fsync_policy="never", snapshot_every_records=10**12, min_cleanable_dirty_ratio=2.0),
    )
    batch = 1000
    for start in range(0, records, batch):
        futures = [log.append([Record(0, b"key-%d" % ((start + i) % keys), VALUE)]) for i in range(batch)]
        await asyncio.gather(*futures)
    await log.close(write_snapshot=False)


async def replay_rate(directory: Path) -> tuple[int, float]:
    count = 0

    def apply(record: Record) -> None:
        nonlocal count
        count += 1

    started = time.perf_counter()
    log = await Log.open(directory, LogConfig(fsync_policy="never"), apply)
    elapsed = time.perf_counter() - started
    await log.close(write_snapshot=False)
    return count, elapsed


async def restart_with_snapshot(directory: Path) -> tuple[int, float]:
    await build_log(directory, 100_000, 100_000)
    log = await Log.open(directory, LogConfig(fsync_policy="never"))
    await log.snapshot()
    for start in range(0, 100_000, 1000):
        await asyncio.gather(
            *(log.append([Record(0, b"key-%d" % (start + i), b"tail")]) for i in range(1000))
        )
    await log.close(write_snapshot=False)
    return await replay_rate(directory)


async def loop_stall_during(work: Callable[[], Awaitable[object]]) -> tuple[float, float, float]:
    """(seconds the work took, worst and p99 gap in ms between 1 ms ticks of the loop meanwhile)."""
    gaps: list[float] = []
    task = asyncio.ensure_future(work())
    started = last = time.perf_counter()
    while not task.done():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append((now - last) * 1000)
        last = now
    elapsed = time.perf_counter() - started
    await task
    gaps.sort()
    return elapsed, gaps[-1], gaps[int(len(gaps) * 0.99)]


async def compaction_and_snapshot_stalls(directory: Path) -> None:
    await build_log(directory, 1_000_000, 100_000)
    log = await Log.open(directory, LogConfig(fsync_policy="never", segment_bytes=8 << 20))
    gc.freeze()  # as `kcoord serve` does after recovery
    log.segments.append(log._create_segment(log.next_lsn))  # seal what was written: all of it compacts
    log._fd = log._open_active()
    for name, work in (("compaction", log.compact), ("snapshot", log.snapshot)):
        elapsed, worst, p99 = await loop_stall_during(work)
        print(f"{name} beside the event loop: {elapsed:.2f} s, loop gap worst {worst:.1f} ms p99 {p99:.1f}")
    await log.close(write_snapshot=False)


async def main(base: Path) -> None:
    print(f"fsync latency: {fsync_latency_ms(base):.2f} ms ({1000 / fsync_latency_ms(base):.0f} fsyncs/s)")
    for appenders in (1, 16, 256):
        directory = Path(tempfile.mkdtemp(dir=base))
        rate = await appends_per_second(directory, appenders)
        print(f"fsync=always appenders={appenders}: {rate:,.0f} appends/s")
        shutil.rmtree(directory)
    directory = Path(tempfile.mkdtemp(dir=base))
    await build_log(directory, 1_000_000, 100_000)
    count, elapsed = await replay_rate(directory)
    print(f"replay without snapshot: {count:,} records in {elapsed:.2f} s = {count / elapsed:,.0f} records/s")
    shutil.rmtree(directory)
    directory = Path(tempfile.mkdtemp(dir=base))
    count, elapsed = await restart_with_snapshot(directory)
    print(f"restart with 100k-key snapshot + 100k tail: {count:,} records applied in {elapsed:.2f} s")
    shutil.rmtree(directory)
    directory = Path(tempfile.mkdtemp(dir=base))
    await compaction_and_snapshot_stalls(directory)
    shutil.rmtree(directory)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    asyncio.run(main(parser.parse_args().dir))
