"""Producer processes of the three client libraries (`workers/producer.py`), seen from a test."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.json_lines_process import JsonLinesProcess

__all__ = ["Ack", "ProducerProcess"]

Ack = tuple[int, int, str, str]  # partition, offset, key, value


class ProducerProcess(JsonLinesProcess):
    """One producer in its own OS process; acknowledgements arrive as they are reported."""

    def __init__(self, options: dict[str, Any], log_path: Path) -> None:
        self.options = options
        self.acked: list[Ack] = []
        self.failures: list[dict[str, Any]] = []
        self.finished: dict[str, Any] | None = None
        super().__init__("tests.integration.workers.producer", options, log_path)

    def __repr__(self) -> str:
        return f"<{self.options['client']} producer pid={self.proc.pid}>"

    def on_event(self, event: dict[str, Any]) -> None:
        if event["event"] == "acked":
            self.acked.extend(tuple(r) for r in event["records"])  # type: ignore[misc]
        elif event["event"] == "failed":
            self.failures.append(event)
        elif event["event"] == "finished":
            self.finished = event

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
