"""What a session fixture builds once per test run, not once per pytest-xdist worker.

The pipeline's recorded data directories (tests/pipeline/conftest.py: `recorded`, `produced`, `kept`)
each drive a real server with stock clients for a minute or more of a loaded machine's time, and the
kcoord image (tests/container/conftest.py) is a `podman build` of the whole package; the tests only
read them (those that damage a directory work on a copy: reader.plan and the jobs open the files
read-only). Under xdist the first worker that needs one builds it in the run's shared temporary
directory (the parent of every worker's basetemp) while holding a file lock; the others wait for the
lock and take what it left: the directory and a pickle of the facts the tests compare against
(acknowledged records, offsets a restarted server fetched, the image's name). A build that fails
leaves no facts: the next worker to take the lock builds again, and each reports its own failure.
Without xdist the fixture builds in its own temporary directory, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The longest build (`kept`: 1500 records, 15 commits, three generations, compaction) took about two
# minutes on a 2-core machine loaded by six workers: a waiting worker gives up well after that.
WAIT_S = 900.0


@contextlib.contextmanager
def _run_lock(path: Path, timeout: float = WAIT_S) -> Iterator[None]:
    """An exclusive flock on `path`, bounded; the kernel drops it if its holder dies."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another worker held {path} for {timeout:.0f}s") from None
                time.sleep(0.2)  # polling the lock (flock has no timeout of its own)
        yield
    finally:
        os.close(fd)


def once(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], dict[str, Any]]
) -> dict[str, Any]:
    """`build(directory)`'s facts, the directory built by the first worker of the run that asks."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    # Only an xdist worker's basetemp (<run>/popen-gwK) has a parent that is this run's alone; a pytest
    # started without xdist from inside a worker inherits the variable but not such a basetemp.
    if worker is None or factory.getbasetemp().name != f"popen-{worker}":
        return build(factory.mktemp(name))
    run_root = factory.getbasetemp().parent
    home, facts = run_root / f"shared-{name}", run_root / f"shared-{name}.pickle"
    with _run_lock(run_root / f"shared-{name}.lock"):
        if facts.exists():
            built: dict[str, Any] = pickle.loads(facts.read_bytes())
            return built
        shutil.rmtree(home, ignore_errors=True)  # a failed build's leftovers
        home.mkdir()
        built = build(home)
        partial = facts.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(built))
        partial.replace(facts)
        return built
