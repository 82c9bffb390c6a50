"""One process at a time on the machine: apt-get and pip installs and image builds the tests do
themselves. pytest-xdist workers (and concurrent runs) reach the same setup at the same moment; two
apt-gets fight over dpkg's lock and one fails, two debootstraps write the same cache directory. The
lock is an flock on a file in the temporary directory, dropped by the kernel when its holder exits."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["APT_WAIT", "machine_lock"]

# apt-get waits for dpkg's lock instead of failing at once when another installer holds it
APT_WAIT = ("-o", "DPkg::Lock::Timeout=600")


@contextlib.contextmanager
def machine_lock(name: str, timeout: float = 1800) -> Iterator[None]:
    """Hold the machine-wide lock `name` (bounded wait: installs and builds take minutes at most)."""
    fd = os.open(Path(tempfile.gettempdir()) / f"kcoord-test-{name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another process held the {name} lock for {timeout:.0f}s") from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing drops the flock
