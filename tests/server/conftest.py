from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.server_process import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A running `python -m coordinator serve` on a free loopback port; stopped by PID afterwards."""
    proc = ServerProcess(tmp_path / "data")
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))  # shown by pytest on failure
