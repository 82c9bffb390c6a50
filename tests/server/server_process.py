"""Start `python -m coordinator serve` as a subprocess on a free loopback port and stop it by PID.

The port comes from the server itself (`--listen 127.0.0.1:0`): the test waits for its
"listening on host:port" log line instead of guessing a free port or sleeping.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["ServerProcess"]

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on (\S+):(\d+)")


class ServerProcess:
    """One server subprocess; stderr lines are collected by a reader thread."""

    def __init__(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.port = 0

    def start(self, timeout: float = 30.0) -> int:
        argv = [
            sys.executable,
            "-m",
            "coordinator",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(self.data_dir),
            "--group-initial-rebalance-delay-ms",
            "0",
            "--fsync",
            "never",
            *self.extra,
        ]
        self.lines = []
        self.proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        match = self.wait_for(LISTENING, timeout)
        self.port = int(match.group(2))
        return self.port

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(
        self, pattern: re.Pattern[str] | str, timeout: float = 30.0, start: int = 0
    ) -> re.Match[str]:
        """The first log line from index `start` matching `pattern`; fails on timeout or exit."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        seen = start
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if (match := regex.search(line)) is not None:
                        return match
                seen = len(self.lines)
                remaining = deadline - time.monotonic()
                exited = self.proc is not None and self.proc.poll() is not None
                if remaining <= 0 or exited:
                    tail = "\n".join(self.lines[-30:])
                    raise AssertionError(f"no log line matching {regex.pattern!r} (exited={exited}):\n{tail}")
                self._cond.wait(min(remaining, 0.5))

    def count(self, pattern: str) -> int:
        regex = re.compile(pattern)
        with self._cond:
            return sum(1 for line in self.lines if regex.search(line))

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig` to our PID and wait for the exit code (SIGKILL if it does not exit in time)."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.proc = None
        return proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)
