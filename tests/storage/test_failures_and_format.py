"""Locking, write failures, the reader under fuzz, and the fast reader against the construct schema."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.storage import FileOps, Log, LogConfig, Record, StorageError, framing
from kcoord.storage.cli import main as storage_cli
from tests.storage.conftest import replay, segments

FAST = LogConfig(fsync_policy="never")


async def test_a_second_process_on_a_locked_directory_fails_clearly(tmp_path: Path) -> None:
    log = await Log.open(tmp_path, FAST)
    try:
        code = (
            "import asyncio, sys\n"
            "from kcoord.storage import Log, StorageLocked\n"
            "try:\n"
            f"    asyncio.run(Log.open({str(tmp_path)!r}))\n"
            "except StorageLocked as exc:\n"
            "    print(exc); sys.exit(3)\n"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        assert result.returncode == 3, result.stderr
        assert "locked" in result.stdout and str(tmp_path) in result.stdout
    finally:
        await log.close()


class FailingOps(FileOps):
    def __init__(self) -> None:
        self.fail_write = False
        self.fail_fsync = False

    def write(self, fd: int, data: bytes) -> None:
        if self.fail_write:
            super().write(fd, data[: len(data) // 2])  # a partial write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync:
            raise OSError(errno.EIO, "Input/output error")
        super().fsync(fd)


@pytest.mark.parametrize("failure", ["fail_write", "fail_fsync"])
async def test_a_failed_write_fails_the_pending_appends_and_leaves_a_clean_log(
    tmp_path: Path, failure: str
) -> None:
    ops = FailingOps()
    log = await Log.open(tmp_path, LogConfig(), ops=ops)
    assert await log.append([Record(0, b"before", b"1")]) >= 0
    setattr(ops, failure, True)
    pending = [log.append([Record(0, b"lost%d" % i, b"x")]) for i in range(3)]
    for future in pending:
        with pytest.raises(StorageError, match=r"No space|Input/output"):
            await future
    setattr(ops, failure, False)
    if failure == "fail_write":  # ENOSPC: the partial write was cut off again, appends go on
        await log.append([Record(0, b"after", b"2")])
    else:  # after a failed fsync the page cache cannot be trusted: refuse appends until a restart
        with pytest.raises(StorageError, match=r"fsync of .* failed"):
            await log.append([Record(0, b"after", b"2")])
    await log.close(write_snapshot=False)
    expected = {(0, b"before"): b"1"} | ({(0, b"after"): b"2"} if failure == "fail_write" else {})
    assert await replay(tmp_path) == expected


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), start=st.integers(0, 50))
def test_the_record_reader_never_raises_and_never_reads_past_the_data(data: bytes, start: int) -> None:
    end = start
    for frame in framing.scan(data, start, 1 << 20):
        assert frame.offset == end
        end = frame.offset + frame.size
    assert end <= max(len(data), start)


@settings(max_examples=200, deadline=None)
@given(
    type_=st.integers(0, 0x7F),
    lsn=st.integers(0, 2**63),
    timestamp=st.integers(-(2**63), 2**63 - 1),
    key=st.binary(max_size=40),
    value=st.none() | st.binary(max_size=80),
    batch_start=st.booleans(),
)
def test_the_struct_reader_agrees_with_the_construct_schema(
    type_: int, lsn: int, timestamp: int, key: bytes, value: bytes | None, batch_start: bool
) -> None:
    flags = framing.FLAG_BATCH_START if batch_start else 0
    data = framing.encode(type_, flags, lsn, timestamp, key, value)
    (fast,) = framing.scan(data, 0, 1 << 20)
    parsed = framing.FRAME_SCHEMA.parse(data)
    assert (fast.type, fast.flags, fast.lsn, fast.timestamp_ms, fast.key) == (
        parsed.type,
        parsed.flags,
        parsed.lsn,
        parsed.timestamp_ms,
        parsed.key,
    )
    assert fast.value == (None if parsed.flags & framing.FLAG_TOMBSTONE else parsed.value)
    assert fast.size == parsed.length + 8


async def test_restart_from_a_snapshot_replays_live_keys_plus_the_tail(tmp_path: Path) -> None:
    log = await Log.open(tmp_path, FAST)
    for i in range(100):
        await log.append([Record(0, b"k%d" % (i % 10), b"v%d" % i)])
    await log.close()  # writes a snapshot
    applied: list[Record] = []
    log = await Log.open(tmp_path, FAST, applied.append)
    assert len(applied) == 10  # live keys only, not 100 records of history
    await log.append([Record(0, b"k0", b"tail")])
    await log.close(write_snapshot=False)
    state = await replay(tmp_path)
    assert state[(0, b"k0")] == b"tail" and len(state) == 10


async def test_a_damaged_snapshot_is_ignored_for_a_full_replay(tmp_path: Path) -> None:
    log = await Log.open(tmp_path, FAST)
    await log.append([Record(0, b"a", b"1")])
    await log.close()
    (snap,) = tmp_path.glob("*.snap")
    snap.write_bytes(snap.read_bytes()[:-1] + b"\x00")
    assert await replay(tmp_path) == {(0, b"a"): b"1"}


async def test_interval_fsync_policy_acknowledges_and_persists(tmp_path: Path) -> None:
    log = await Log.open(tmp_path, LogConfig(fsync_policy="interval:5"))
    await log.append([Record(0, b"a", b"1")])
    await log.close(write_snapshot=False)
    assert await replay(tmp_path) == {(0, b"a"): b"1"}
    with pytest.raises(ValueError):
        await Log.open(tmp_path, LogConfig(fsync_policy="sometimes"))


async def test_cli_dump_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = await Log.open(tmp_path, FAST)
    await log.append([Record(0, b"a", b"1"), Record(1, b"b", None)])
    await log.close(write_snapshot=False)
    assert storage_cli(["dump", "--data-dir", str(tmp_path)], render=lambda r: f"T{r.type}:{r.key!r}") == 0
    out = capsys.readouterr().out
    assert "T0:b'a' batch-start" in out and "T1:b'b'" in out and "batch-end" in out
    assert storage_cli(["verify", "--data-dir", str(tmp_path)]) == 0
    (segment,) = segments(tmp_path)
    segment.write_bytes(segment.read_bytes()[:-2])
    assert storage_cli(["verify", "--data-dir", str(tmp_path)]) == 1
    assert "torn tail at offset" in capsys.readouterr().out


async def test_a_multi_mib_record_like_a_10k_member_group_fits_the_default_cap(tmp_path: Path) -> None:
    """A 10,000-member group's metadata is a few MiB; with a 1 MiB cap its SyncGroup could never
    persist and the group rebalanced forever (found by bench/coordinator.py)."""
    value = bytes(range(256)) * (4 * 4096)  # 4 MiB
    log = await Log.open(tmp_path, FAST)
    await log.append([Record(1, b"big-group", value)])
    await log.close(write_snapshot=False)
    assert await replay(tmp_path) == {(1, b"big-group"): value}
    log = await Log.open(tmp_path / "capped", LogConfig(fsync_policy="never", max_record_bytes=1 << 20))
    with pytest.raises(StorageError, match="exceeds"):
        await log.append([Record(1, b"big-group", value)])
    await log.close(write_snapshot=False)
