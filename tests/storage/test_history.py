"""The history area (kcoord/storage/history.py): compaction moves originals aside whole, retention bounds them
by age and bytes, and recovery never reads them (a corrupt history segment stops nothing)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from kcoord.storage import Log, LogConfig, Record, history
from kcoord.storage.files import FileOps, base_of, list_segments
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.storage.conftest import fold, replay

SMALL = LogConfig(fsync_policy="never", segment_bytes=300, min_cleanable_dirty_ratio=2.0)
OPS = [(0, b"k%d" % (i % 3), b"v%03d" % i) for i in range(40)]  # 3 keys rewritten: much to drop


async def _written(directory: Path, config: LogConfig = SMALL) -> dict[str, bytes]:
    """Write OPS over several segments; returns each segment's bytes before any compaction."""
    log = await Log.open(directory, config)
    for type_, key, value in OPS:
        await log.append([Record(type_, key, value)])
    await log.close(write_snapshot=False)
    return {path.name: path.read_bytes() for path in list_segments(directory)}


async def _compact(directory: Path, config: LogConfig = SMALL) -> None:
    log = await Log.open(directory, config)
    await log.compact()
    await log.close()


def test_compaction_moves_each_original_aside_byte_for_byte_once(tmp_path: Path) -> None:
    originals = asyncio.run(_written(tmp_path))
    sealed = sorted(originals)[:-1]
    asyncio.run(_compact(tmp_path))
    kept = history.list_history(tmp_path)
    assert [h.base_lsn for h in kept] == [base_of(Path(name)) for name in sealed]
    for old in kept:
        name = f"{old.base_lsn:020d}.log"
        assert old.path.read_bytes() == originals[name], "a history segment is the original, not a copy"
        assert (tmp_path / name).stat().st_size < len(originals[name]), "the live segment was compacted"
    # A second pass rewrites nothing that history already holds the original of.
    asyncio.run(_compact(tmp_path))
    assert [h.path.read_bytes() for h in history.list_history(tmp_path)] == [
        originals[f"{h.base_lsn:020d}.log"] for h in kept
    ]
    assert asyncio.run(replay(tmp_path)) == fold([Record(*op) for op in OPS])


def test_recovery_ignores_a_corrupt_history(tmp_path: Path) -> None:
    asyncio.run(_written(tmp_path))
    asyncio.run(_compact(tmp_path))
    first = history.list_history(tmp_path)[0].path
    raw = bytearray(first.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    first.write_bytes(bytes(raw))
    (history.history_dir(tmp_path) / f"{10**15:020d}.0.log").write_bytes(b"not a segment at all")
    before = {p.name: p.read_bytes() for p in history.history_dir(tmp_path).iterdir()}
    assert asyncio.run(replay(tmp_path)) == fold([Record(*op) for op in OPS])
    assert {p.name: p.read_bytes() for p in history.history_dir(tmp_path).iterdir()} == before
    verified = _storage("verify", tmp_path)
    assert verified.returncode == 1 and verified.stdout.count("history:") == 2, verified.stdout


def test_retention_removes_history_older_than_the_age_bound(tmp_path: Path) -> None:
    asyncio.run(_written(tmp_path))
    asyncio.run(_compact(tmp_path))
    kept = history.list_history(tmp_path)
    assert len(kept) >= 3
    # "now" just past the second-oldest file's retention: the two oldest go, the rest stay
    now = kept[1].newest_ms + 60_000 + 1
    history.trim(tmp_path, now, 60_000, 1 << 30, FileOps())
    assert history.list_history(tmp_path) == [h for h in kept if now - h.newest_ms <= 60_000]
    assert len(history.list_history(tmp_path)) == len(kept) - 2


def test_retention_keeps_the_newest_history_within_the_byte_bound(tmp_path: Path) -> None:
    asyncio.run(_written(tmp_path))
    asyncio.run(_compact(tmp_path))
    kept = history.list_history(tmp_path)
    bound = kept[-1].size + kept[-2].size
    config = LogConfig(fsync_policy="never", segment_bytes=300, history_retention_bytes=bound)
    asyncio.run(_reopen(tmp_path, config))  # retention applies at open
    assert history.list_history(tmp_path) == kept[-2:]
    assert sum(h.size for h in history.list_history(tmp_path)) <= bound


async def _reopen(directory: Path, config: LogConfig) -> None:
    log = await Log.open(directory, config)
    await log.close(write_snapshot=False)


def test_no_history_is_kept_when_a_retention_is_zero(tmp_path: Path) -> None:
    asyncio.run(_written(tmp_path))
    none = LogConfig(fsync_policy="never", segment_bytes=300, history_retention_ms=0)
    asyncio.run(_compact(tmp_path, none))
    assert history.list_history(tmp_path) == []
    assert asyncio.run(replay(tmp_path)) == fold([Record(*op) for op in OPS])


def _storage(command: str, data: Path) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "storage", command, "--data-dir", str(data)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_kcoord_serve_starts_over_a_corrupt_history_and_restores_every_commit(tmp_path: Path) -> None:
    from tests.faults.conftest import NONE, commit, committed
    from tests.server.wire import connect, create_topic

    data = tmp_path / "data"
    server = KcoordServer(data, log_path=tmp_path / "server.log")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 4)["error_code"] == NONE
            for offset in range(1, 31):  # every commit replaces the last: compaction drops 29 per partition
                for partition in range(4):
                    assert commit(sock, offset * 10 + partition, partition) == NONE
        assert server.stop() == 0
        compacted = _storage("compact", data)
        assert compacted.returncode == 0, compacted.stderr
        originals = history.list_history(data)
        assert originals, "offline compaction moved the original segment aside"
        for old in originals:
            old.path.write_bytes(old.path.read_bytes()[:100] + b"\xff" * 64)  # torn and garbled
        server.start()
        with connect(server.address) as sock:
            assert [committed(sock, partition) for partition in range(4)] == [300 + p for p in range(4)]
    finally:
        server.kill()
    assert not [line for line in server.lines if "Traceback" in line or "corrupt" in line]
