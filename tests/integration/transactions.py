"""Transactional producers, read_committed readers and processors (workers/txn_*.py), seen from a test."""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.json_lines_process import JsonLinesProcess

__all__ = ["Processor", "TxnProducer", "read_topic"]


class _Events(JsonLinesProcess):
    def __init__(self, module: str, options: dict[str, Any], log_path: Path, *, stdin: bool) -> None:
        self.events: list[dict[str, Any]] = []
        super().__init__(module, options, log_path, stdin=stdin)

    def on_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def wait_event(self, predicate: Any, timeout: float, what: str, after: int = 0) -> dict[str, Any]:
        """The first event (from index `after`) matching `predicate`, waiting at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[after:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    tail = self.log_path.read_text(errors="replace").splitlines()[-30:]
                    raise AssertionError(
                        f"{self}: no {what} within {timeout:.0f}s (exit {self.proc.poll()}); "
                        f"last events {self.events[-5:]}\n" + "\n".join(tail)
                    )
                self._cond.wait(min(remaining, 0.2))

    def count(self, name: str) -> int:
        with self._cond:
            return sum(1 for e in self.events if e["event"] == name)

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait(10)

    def cleanup(self) -> None:
        self.kill()
        self._log.close()


class TxnProducer(_Events):
    """One transactional producer (workers/txn_producer.py); `call` runs a command, returns its answer."""

    _ids = itertools.count(1)

    def __init__(self, options: dict[str, Any], log_path: Path) -> None:
        self.options = options
        super().__init__("tests.integration.workers.txn_producer", options, log_path, stdin=True)

    def __repr__(self) -> str:
        return (
            f"<{self.options['client']} txn producer {self.options['transactional_id']} pid={self.proc.pid}>"
        )

    def call(self, cmd: str, timeout: float = 90.0, **fields: Any) -> dict[str, Any]:
        command_id = next(self._ids)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, "id": command_id, **fields}) + "\n")
        self.proc.stdin.flush()
        return self.wait_event(
            lambda e: e["event"] in ("done", "failed") and e.get("id") == command_id,
            timeout,
            f"answer to {cmd} #{command_id}",
        )

    def ok(self, cmd: str, **fields: Any) -> dict[str, Any]:
        answer = self.call(cmd, **fields)
        assert answer["event"] == "done", f"{self}: {cmd} failed: {answer.get('error')}"
        return answer

    def close(self, timeout: float = 30.0) -> None:
        if self.alive():
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"cmd": "close"}) + "\n")
            self.proc.stdin.flush()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


class Processor(_Events):
    """A consume-transform-produce loop (workers/txn_processor.py)."""

    def __init__(self, options: dict[str, Any], log_path: Path) -> None:
        self.options = options
        super().__init__("tests.integration.workers.txn_processor", options, log_path, stdin=False)

    def __repr__(self) -> str:
        return f"<processor {self.options['transactional_id']} pid={self.proc.pid}>"

    def committed_records(self) -> int:
        with self._cond:
            return sum(e["records"] for e in self.events if e["event"] == "txn_committed")


def read_topic(
    client: str,
    bootstrap: str,
    topic: str,
    until: dict[int, int],
    log_path: Path,
    isolation: str = "read_committed",
    timeout_s: float = 60.0,
) -> tuple[list[tuple[int, int, str]], bool]:
    """Read `topic` from the beginning under `isolation` with `client` until the position reaches
    `until` on every partition (or the timeout): the records read and whether it got there."""
    options = {
        "client": client,
        "bootstrap": bootstrap,
        "topic": topic,
        "isolation": isolation,
        "until": {str(p): o for p, o in until.items()},
        "timeout_s": timeout_s,
    }
    reader = _Events("tests.integration.workers.txn_reader", options, log_path, stdin=False)
    try:
        finished = reader.wait_event(
            lambda e: e["event"] == "finished", timeout_s + 60, "the reader to finish"
        )
        records = next(e for e in reader.events if e["event"] == "records")["records"]
        return [(p, o, v) for p, o, v in records], bool(finished["reached"])
    finally:
        reader.cleanup()


def values(records: list[tuple[int, int, str]]) -> Iterator[str]:
    return (v for _, _, v in records)
