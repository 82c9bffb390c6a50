"""Compaction and snapshots change how much is replayed, never what state results."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.storage import Log, LogConfig, Record, framing
from kcoord.storage.compaction import CLEANED_SUFFIX
from kcoord.storage.files import SEGMENT_HEADER_SIZE, SWAP_SUFFIX
from tests.storage.conftest import fold, replay, segments

SMALL = LogConfig(fsync_policy="never", segment_bytes=300, min_cleanable_dirty_ratio=2.0)

operations = st.lists(
    st.tuples(
        st.integers(0, 1), st.sampled_from([b"a", b"b", b"c", b"d", b"e"]), st.none() | st.binary(max_size=20)
    ),
    min_size=1,
    max_size=60,
)


async def _write(directory: Path, ops: list[tuple[int, bytes, bytes | None]], config: LogConfig) -> Log:
    log = await Log.open(directory, config)
    for type_, key, value in ops:
        await log.append([Record(type_, key, value)])
    return log


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=operations, tail=operations)
def test_state_after_compaction_and_after_snapshot_plus_tail_equals_state_before(
    ops: list[tuple[int, bytes, bytes | None]], tail: list[tuple[int, bytes, bytes | None]]
) -> None:
    asyncio.run(_compaction_case(ops, tail))


async def _compaction_case(
    ops: list[tuple[int, bytes, bytes | None]], tail: list[tuple[int, bytes, bytes | None]]
) -> None:
    directory = Path(tempfile.mkdtemp())
    try:
        expected = fold([Record(*op) for op in ops])
        log = await _write(directory, ops, SMALL)
        await log.compact()
        await log.close(write_snapshot=False)
        assert await replay(directory, SMALL) == expected
        log = await Log.open(directory, SMALL)
        await log.snapshot()
        for type_, key, value in tail:
            await log.append([Record(type_, key, value)])
        await log.close(write_snapshot=False)
        assert await replay(directory, SMALL) == fold([Record(*op) for op in ops + tail])
    finally:
        shutil.rmtree(directory)


async def test_compaction_shrinks_the_sealed_segments(tmp_path: Path) -> None:
    log = await _write(tmp_path, [(0, b"k", b"v%d" % i) for i in range(50)], SMALL)
    before = sum(p.stat().st_size for p in segments(tmp_path))
    assert log.dirty_ratio() > 0.5
    assert await log.compact() > 0
    assert log.dirty_ratio() == 0.0
    await log.close(write_snapshot=False)
    assert sum(p.stat().st_size for p in segments(tmp_path)) < before
    assert await replay(tmp_path) == {(0, b"k"): b"v49"}


async def test_background_compaction_runs_when_the_dirty_ratio_is_reached(tmp_path: Path) -> None:
    config = LogConfig(fsync_policy="never", segment_bytes=300, compaction_check_interval_ms=0)
    log = await _write(tmp_path, [(0, b"k", b"v%d" % i) for i in range(60)], config)
    for _ in range(100):
        if log.dirty_ratio() < 0.5:
            break
        await asyncio.sleep(0.01)
    assert log.dirty_ratio() < 0.5
    await log.close(write_snapshot=False)
    assert await replay(tmp_path) == {(0, b"k"): b"v59"}


async def test_expired_tombstones_are_dropped_and_fresh_ones_kept(tmp_path: Path) -> None:
    config = LogConfig(
        fsync_policy="never", segment_bytes=200, min_cleanable_dirty_ratio=2.0, tombstone_retention_ms=0
    )
    log = await _write(
        tmp_path, [(0, b"gone", b"x"), (0, b"gone", None)] + [(0, b"k", b"%d" % i) for i in range(20)], config
    )
    await log.compact()
    assert (0, b"gone") not in log.keydir
    await log.close(write_snapshot=False)
    assert b"gone" not in b"".join(p.read_bytes() for p in segments(tmp_path)[:-1])


async def test_every_step_of_an_interrupted_swap_recovers_without_loss(tmp_path: Path) -> None:
    """Leave the files as a kill between each step of the rename protocol would."""
    source = tmp_path / "source"
    log = await _write(source, [(0, b"k%d" % (i % 4), b"v%d" % i) for i in range(40)], SMALL)
    expected = await _state(log)
    await log.close(write_snapshot=False)
    compacted = tmp_path / "compacted"
    shutil.copytree(source, compacted)
    log = await Log.open(compacted, SMALL)
    await log.compact()
    await log.close(write_snapshot=False)
    sealed = segments(source)[0].name
    steps = {
        "cleaned written": [(sealed + CLEANED_SUFFIX, compacted / sealed)],
        "renamed to swap": [(sealed + SWAP_SUFFIX, compacted / sealed)],
        "original deleted": [(sealed + SWAP_SUFFIX, compacted / sealed), (sealed, None)],
    }
    for step, files in steps.items():
        case = tmp_path / step.replace(" ", "-")
        shutil.copytree(source, case)
        for name, content in files:
            if content is None:
                os.unlink(case / name)
            else:
                shutil.copy(content, case / name)
        assert await replay(case, SMALL) == expected, step
        assert not list(case.glob("*" + CLEANED_SUFFIX)) and not list(case.glob("*" + SWAP_SUFFIX))


async def _state(log: Log) -> dict[tuple[int, bytes], bytes]:
    return {key: entry.value for key, entry in log.keydir.items() if entry.value is not None}


async def test_the_dirty_ratio_is_checked_only_every_compaction_check_interval(tmp_path: Path) -> None:
    config = LogConfig(fsync_policy="never", segment_bytes=300, compaction_check_interval_ms=3_600_000)
    log = await _write(tmp_path, [(0, b"k", b"v%d" % i) for i in range(60)], config)
    await asyncio.sleep(0.05)  # room for a background pass, were one started
    assert log.dirty_ratio() > 0.5  # the first check ran at the first append, with one segment only
    await log.close(write_snapshot=False)


async def test_compacted_batches_keep_their_live_records_and_lose_their_batch_marks(tmp_path: Path) -> None:
    config = LogConfig(fsync_policy="never", segment_bytes=300, min_cleanable_dirty_ratio=2.0)
    log = await Log.open(tmp_path, config)
    for i in range(30):
        # each batch starts with a key of its own, so the batch starts stay live
        await log.append(
            [Record(2, b"u%d" % i, b"u"), Record(0, b"a", b"%d" % i), Record(1, b"b%d" % (i % 3), b"x" * i)]
        )
    await log.compact()
    await log.close(write_snapshot=False)
    sealed = segments(tmp_path)[:-1]
    frames = [f for path in sealed for f in framing.scan(path.read_bytes(), SEGMENT_HEADER_SIZE, 1 << 20)]
    assert sum(f.type == 2 for f in frames) > 1  # batch starts were kept ...
    assert not any(f.flags & framing.FLAG_BATCH_START for f in frames)  # ... without their mark
    assert not any(f.type == framing.TYPE_BATCH_END for f in frames)
    assert await replay(tmp_path, config) == {
        (0, b"a"): b"29",
        (1, b"b0"): b"x" * 27,
        (1, b"b1"): b"x" * 28,
        (1, b"b2"): b"x" * 29,
    } | {(2, b"u%d" % i): b"u" for i in range(30)}
