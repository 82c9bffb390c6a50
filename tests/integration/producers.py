"""Producer processes of the three client libraries (`workers/producer.py`), seen from a test."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.kcoord_process import REPO

__all__ = ["Ack", "ProducerProcess"]

Ack = tuple[int, int, str, str]  # partition, offset, key, value


class ProducerProcess:
    """One producer in its own OS process; acknowledgements arrive as they are reported."""

    def __init__(self, options: dict[str, Any], log_path: Path) -> None:
        self.options = options
        self.log_path = log_path
        self.acked: list[Ack] = []
        self.failures: list[dict[str, Any]] = []
        self.finished: dict[str, Any] | None = None
        self._cond = threading.Condition()
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.workers.producer", json.dumps(options)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def __repr__(self) -> str:
        return f"<{self.options['client']} producer pid={self.proc.pid}>"

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            with self._cond:
                if event["event"] == "acked":
                    self.acked.extend(tuple(r) for r in event["records"])  # type: ignore[misc]
                elif event["event"] == "failed":
                    self.failures.append(event)
                elif event["event"] == "finished":
                    self.finished = event
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def acked_count(self) -> int:
        with self._cond:
            return len(self.acked)

    def wait_acked(self, count: int, timeout: float) -> None:
        self._wait(lambda: len(self.acked) >= count, timeout, f"{count} acknowledgements")

    def wait_finished(self, timeout: float) -> list[Ack]:
        """Wait until the producer delivered (or gave up on) everything; its acknowledgements."""
        self._wait(lambda: self.finished is not None, timeout, "the producer to finish")
        self.proc.wait(30)
        return list(self.acked)

    def _wait(self, condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and not condition()):
                    if self.proc.poll() is not None:
                        self._cond.wait(0.5)  # the last lines may still be in the pipe
                        if condition():
                            return
                    tail = self.log_path.read_text(errors="replace").splitlines()[-30:]
                    raise AssertionError(
                        f"{self}: no {what} within {timeout:.0f}s (acked {len(self.acked)}, "
                        f"failures {self.failures[:3]}, exit {self.proc.poll()})\n" + "\n".join(tail)
                    )
                self._cond.wait(min(remaining, 0.2))

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()
