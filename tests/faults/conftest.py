"""Real storage faults for a real `kcoord serve` process: a small tmpfs (ENOSPC) and a FUSE passthrough
(tests/faults/fusefs.py) that fails write/fsync/fsyncdir with EIO while a control file exists.

Mounting needs root (tmpfs) and /dev/fuse + fuse3 + mfusepy (FUSE; installed here when missing). A
test that cannot mount is skipped with the reason, except under CI=true, where it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.locks import APT_WAIT, machine_lock
from tests.server.wire import call

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
NONE, NOT_COORDINATOR, KAFKA_STORAGE_ERROR = 0, 16, 56
EXIT_STORAGE_FATAL = 75  # docs/running/operations.md "Exit codes"; kcoord/storage/faults.py


def cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


@dataclass
class Tmpfs:
    path: Path

    def resize(self, size: str) -> None:
        result = _run("mount", "-o", f"remount,size={size}", str(self.path))
        assert result.returncode == 0, result.stderr

    def fill(self) -> Path:
        """Write a filler file until ENOSPC: the next append of kcoord fails for real."""
        filler = self.path / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for chunk in (1 << 20, 4096, 512):
                try:
                    while True:
                        os.write(fd, b"\0" * chunk)
                except OSError:
                    pass
        finally:
            os.close(fd)
        return filler


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Tmpfs]:
    mountpoint = tmp_path / "tmpfs"
    mountpoint.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        cannot("mounting a tmpfs needs root")
    result = _run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mountpoint))
    if result.returncode != 0:
        cannot(f"cannot mount a tmpfs: {result.stderr.strip()}")
    try:
        yield Tmpfs(mountpoint)
    finally:
        _run("umount", "-l", str(mountpoint))


def _ensure_fuse() -> None:
    if not Path("/dev/fuse").exists():
        cannot("no /dev/fuse")
    with machine_lock("install"):  # one installer at a time on the machine (xdist workers, other runs)
        if shutil.which("fusermount3") is None and os.geteuid() == 0:
            _run("apt-get", "install", "-y", "-q", *APT_WAIT, "fuse3")
        if importlib.util.find_spec("mfusepy") is None:
            _run(sys.executable, "-m", "pip", "install", "-q", "mfusepy")
            importlib.invalidate_caches()
    if shutil.which("fusermount3") is None:
        cannot("fusermount3 missing (apt-get install fuse3)")
    if importlib.util.find_spec("mfusepy") is None:
        cannot("mfusepy missing (pip install mfusepy)")


@dataclass
class FuseFs:
    path: Path
    control: Path

    def fail(self, what: str, on: bool = True) -> None:
        flag = self.control / f"fail-{what}"
        if on:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)


@pytest.fixture
def fusefs(tmp_path: Path) -> Iterator[FuseFs]:
    _ensure_fuse()
    backing, mountpoint, control = tmp_path / "backing", tmp_path / "fuse", tmp_path / "control"
    for d in (backing, mountpoint, control):
        d.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.fusefs", str(backing), str(mountpoint), str(control)],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 15
    while not os.path.ismount(mountpoint):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            cannot(f"cannot mount the FUSE passthrough: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    try:
        yield FuseFs(mountpoint, control)
    finally:
        for flag in control.iterdir():
            flag.unlink()
        _run("fusermount3", "-u", "-z", str(mountpoint))
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# -- the wire --------------------------------------------------------------------------------------
def commit(sock: Any, offset: int, partition: int = 0, group: str = "g") -> int:
    """OffsetCommit v3 of one offset (admin-style, generation -1); the partition's error code."""
    topic = {
        "name": "t",
        "partitions": [
            {"partition_index": partition, "committed_offset": offset, "committed_metadata": f"m{offset}"}
        ],
    }
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": -1,
        "topics": [topic],
    }
    return int(call(sock, OFFSET_COMMIT, 3, body)["topics"][0]["partitions"][0]["error_code"])


def committed(sock: Any, partition: int = 0, group: str = "g") -> int:
    body = {"group_id": group, "topics": [{"name": "t", "partition_indexes": [partition]}]}
    result = call(sock, OFFSET_FETCH, 3, body)["topics"][0]["partitions"][0]
    assert result["error_code"] == NONE
    return int(result["committed_offset"])
