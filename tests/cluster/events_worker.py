"""A client worker process whose JSON-lines stdout goes to a file, read when it has finished.

A pipe read only at the end holds 64 KiB: a producer or committer printing one line per acknowledgement
fills it within about a thousand events and then blocks in `print` for the rest of its run, so a test
that looks for acknowledgements after a fault finds none (seen in tests/cluster/test_db_faults.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.kcoord_process import REPO

__all__ = ["EventsWorker", "start_worker"]


@dataclass
class EventsWorker:
    proc: subprocess.Popen[str]
    out: Path

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        self.proc.kill()

    def events(self, timeout: float) -> list[dict[str, Any]]:
        """Every event, once the worker exited (within `timeout`) with status 0."""
        self.proc.wait(timeout=timeout)
        text = self.out.read_text(errors="replace")
        assert self.proc.returncode == 0, f"worker exited {self.proc.returncode}: {text[-2000:]}"
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def start_worker(module: str, args: list[str], log_dir: Path, name: str) -> EventsWorker:
    """`python -m module args...`, stdout to `log_dir/name.jsonl`, stderr to `log_dir/name.err`."""
    out = log_dir / f"{name}.jsonl"
    with out.open("w") as stdout, (log_dir / f"{name}.err").open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=REPO, stdout=stdout, stderr=stderr, text=True
        )
    return EventsWorker(proc, out)
