from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kcoord_process import KcoordServer


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KcoordServer]:
    """A running `python -m kcoord serve` on a free loopback port; stopped by PID afterwards.

    `--fsync never` unless a test says otherwise: `@pytest.mark.server_args("--fsync", "always")`.
    """
    marker = request.node.get_closest_marker("server_args")
    proc = KcoordServer(tmp_path / "data", "--fsync", "never", *(marker.args if marker else ()))
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))  # shown by pytest on failure
