"""A client library's process seen from a test: it writes one JSON event per line on stdout.

`JsonLinesProcess` starts `python -m <module> <options as JSON>` with stderr in a log file and reads
its stdout on a thread; each decoded event goes to `on_event` under the condition variable, which is
then notified, so tests wait on conditions instead of sleeping. The end of the output sets `eof`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.kcoord_process import REPO

__all__ = ["JsonLinesProcess"]


class JsonLinesProcess:
    def __init__(self, module: str, options: dict[str, Any], log_path: Path, *, stdin: bool = False) -> None:
        self.log_path = log_path
        self.eof = False
        self._cond = threading.Condition()
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, json.dumps(options)],
            cwd=REPO,
            stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def on_event(self, event: dict[str, Any]) -> None:
        """Record one event (called with the condition held)."""

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            event["at"] = time.monotonic()
            with self._cond:
                self.on_event(event)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
