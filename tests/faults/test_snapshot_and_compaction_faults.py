"""A full disk (a real tmpfs) during a snapshot and during a compaction: the files that exist stay intact,
the failure is one clear line, and the next start recovers every acknowledged commit."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.conftest import NONE, Tmpfs, commit, committed
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.server.wire import connect, create_topic


def _digest(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != "LOCK"
    }


def _storage(command: str, data: Path) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "storage", command, "--data-dir", str(data)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_snapshot_at_shutdown_on_a_full_disk_leaves_the_log_intact(tmpfs: Tmpfs) -> None:
    data = tmpfs.path / "data"
    server = KcoordServer(data, "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            for group in range(200):  # 200 live keys: the snapshot would need room for all of them
                assert commit(sock, group + 7, group=f"g{group}") == NONE
        filler = tmpfs.fill()
        before = _digest(data)
        assert server.stop() == 0, "a snapshot that does not fit is not a reason to fail shutdown"
        assert server.count("no snapshot at close") == 1
        assert not [line for line in server.lines if "Traceback" in line]
        after = _digest(data)
        assert {name: h for name, h in after.items() if name in before} == before, "existing files changed"
        assert not [name for name in after if name.endswith(".snap") and name not in before]
        filler.unlink()
        verified = _storage("verify", data)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        server.start()
        with connect(server.address) as sock:
            for group in range(200):
                assert committed(sock, group=f"g{group}") == group + 7
    finally:
        server.kill()


def test_compaction_on_a_full_disk_fails_in_one_line_and_changes_nothing(tmpfs: Tmpfs) -> None:
    from kcoord import storage
    from kcoord.coordinator.groups.records import OffsetCommitRecord
    from kcoord.coordinator.persistence import to_storage

    data = tmpfs.path / "data"
    config = storage.LogConfig(segment_bytes=64 * 1024)  # many sealed segments to compact

    async def write() -> None:
        log = await storage.Log.open(data, config)
        now = int(time.time() * 1000)
        for round_ in range(40):  # every key rewritten 40 times: compaction has much to drop
            records = [
                to_storage(OffsetCommitRecord("g", "t", p, round_ * 100 + p, -1, "m", now, -1))
                for p in range(100)
            ]
            await log.append(records)
        await log.close(write_snapshot=False)

    import asyncio

    asyncio.run(write())
    assert len(list(data.glob("*.log"))) >= 2  # at least one sealed segment to compact
    filler = tmpfs.fill()
    before = _digest(data)
    compacted = _storage("compact", data)
    assert compacted.returncode != 0
    assert "Traceback" not in compacted.stderr
    lines = [line for line in compacted.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "No space left on device" in lines[0], compacted.stderr
    assert _digest(data) == before, "a failed compaction must leave every file as it was"
    filler.unlink()

    verified = _storage("verify", data)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    server = KcoordServer(data, "--fsync", "always")
    server.start()
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 100)["error_code"] == NONE
            for p in (0, 42, 99):
                assert committed(sock, partition=p) == 3900 + p
    finally:
        server.kill()
    # With room again, the same compaction succeeds.
    assert _storage("compact", data).returncode == 0


pytestmark = pytest.mark.timeout(180)
