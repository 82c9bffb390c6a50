"""Torn tails are truncated at the last good record; damage in a sealed segment stops the start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kcoord.storage import Log, LogConfig, Record, StorageCorruption
from tests.storage.conftest import replay, segments

FAST = LogConfig(fsync_policy="never")


async def write_records(directory: Path, count: int, config: LogConfig = FAST) -> None:
    log = await Log.open(directory, config)
    for i in range(count):
        await log.append([Record(0, b"key-%d" % i, b"value-%d" % i)])
    await log.close(write_snapshot=False)


async def test_records_survive_a_clean_reopen(tmp_path: Path) -> None:
    await write_records(tmp_path, 5)
    assert await replay(tmp_path) == {(0, b"key-%d" % i): b"value-%d" % i for i in range(5)}


async def test_truncating_the_last_record_at_every_byte_keeps_exactly_the_complete_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "source"
    await write_records(source, 3)
    (segment,) = segments(source)
    data = segment.read_bytes()
    without_last = await _state_with(tmp_path / "two", data, len(data) - 1)
    last_record_start = len(data) - (len(data) - _end_of_two_records(data))
    for cut in range(last_record_start, len(data)):
        state = await _state_with(tmp_path / f"cut{cut}", data, cut)
        assert state == without_last, cut
    assert len(without_last) == 2
    assert "torn tail" in caplog.text


def _end_of_two_records(data: bytes) -> int:
    from kcoord.storage import framing
    from kcoord.storage.files import SEGMENT_HEADER_SIZE

    frames = list(framing.scan(data, SEGMENT_HEADER_SIZE, 1 << 20))
    return frames[1].offset + frames[1].size


async def _state_with(directory: Path, data: bytes, cut: int) -> dict[tuple[int, bytes], bytes]:
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(data[:cut])
    state = await replay(directory)
    # the truncation is on disk too: a second open sees a clean log
    assert (directory / "00000000000000000000.log").stat().st_size <= cut
    return state


async def test_a_flipped_bit_in_the_last_record_truncates_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await write_records(tmp_path, 3)
    (segment,) = segments(tmp_path)
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0x10
    segment.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        state = await replay(tmp_path)
    assert sorted(state) == [(0, b"key-0"), (0, b"key-1")]
    assert str(segment) in caplog.text and "offset" in caplog.text


async def test_a_flipped_bit_in_a_sealed_segment_refuses_to_start_naming_file_and_offset(
    tmp_path: Path,
) -> None:
    config = LogConfig(fsync_policy="never", segment_bytes=100)
    await write_records(tmp_path, 6, config)
    sealed = segments(tmp_path)[0]
    assert len(segments(tmp_path)) > 1
    data = bytearray(sealed.read_bytes())
    data[40] ^= 0x01
    sealed.write_bytes(bytes(data))
    with pytest.raises(StorageCorruption) as raised:
        await Log.open(tmp_path, config)
    assert str(sealed) in str(raised.value) and "offset 32" in str(raised.value)
    assert "kcoord storage" in str(raised.value)
    # the lock was released: a repaired directory can be opened again
    from kcoord.storage.cli import main

    assert main(["repair", "--data-dir", str(tmp_path)]) == 0
    assert len(await replay(tmp_path, config)) < 6


async def test_an_unfinished_batch_at_the_tail_is_dropped_whole(tmp_path: Path) -> None:
    log = await Log.open(tmp_path, FAST)
    await log.append([Record(0, b"single", b"1")])
    await log.append([Record(0, b"a", b"1"), Record(0, b"b", b"2"), Record(0, b"c", b"3")])
    await log.close(write_snapshot=False)
    (segment,) = segments(tmp_path)
    data = segment.read_bytes()
    segment.write_bytes(data[:-5])  # cut inside the batch-end record
    assert await replay(tmp_path) == {(0, b"single"): b"1"}


async def test_appends_after_a_truncated_tail_land_behind_good_records(tmp_path: Path) -> None:
    await write_records(tmp_path, 2)
    (segment,) = segments(tmp_path)
    segment.write_bytes(segment.read_bytes()[:-4])
    log = await Log.open(tmp_path, FAST)
    await log.append([Record(0, b"after", b"x")])
    await log.close(write_snapshot=False)
    assert await replay(tmp_path) == {(0, b"key-0"): b"value-0", (0, b"after"): b"x"}
