"""An in-process kcoord with --enable-test-controls on its own thread and event loop (as the pytest
plugin runs it), and helpers to call its `TestControls` from the test's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.wiring.app import App
from kcoord.wiring.config import parse_serve_argv
from kcoord.wiring.controls import TestControls

CALL_TIMEOUT_S = 30.0


class Served:
    """The server's thread and loop; `call(lambda c: c.reset())` runs a control there."""

    def __init__(self, data_dir: Path, *flags: str) -> None:
        argv = [
            "--data-dir", str(data_dir), "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
            "--enable-test-controls", "--group-initial-rebalance-delay-ms", "0",
            "--group-min-session-timeout-ms", "100", "--fsync", "never", *flags,
        ]  # fmt: skip
        self.config = parse_serve_argv(argv)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.app = App(self.config)
        self.run(self.app.startup())
        assert self.app.bound is not None and self.app.http is not None and self.app.http.bound is not None
        self.bootstrap = f"127.0.0.1:{self.app.bound.port}"
        self.http_port = self.app.http.bound.port

    @property
    def controls(self) -> TestControls:
        assert self.app.controls is not None
        return self.app.controls

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT_S)

    def call(self, control: Callable[[TestControls], Coroutine[Any, Any, Any]]) -> Any:
        return self.run(control(self.controls))

    def close(self, abandon: bool = False) -> None:
        self.run(self.app.abandon() if abandon else self.app.shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "data")
    try:
        yield server
    finally:
        server.close()
