"""Servers as real subprocesses for tests and benchmarks: `kcoord serve`, or any program that logs
"listening on host:port".

A `kcoord serve` gets its port at the first start from tests/ports.py (outside the kernel's ephemeral
range and reserved for this process, so no other worker's connection or server takes it while the
server restarts); callers wait for its "listening on" line instead of sleeping, and a restart keeps the
port so clients reconnect to the same address. Every process is stopped by its PID (SIGKILL at the latest).
Also here: a raw ApiVersions v0 round trip, written with `struct` so that it checks the server
independently of our own codec.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.kcoord_fork import ForkedProcess, popen_kcoord
from tests.ports import free_port

__all__ = [
    "REPO",
    "CommandProcess",
    "KcoordServer",
    "ServerProcess",
    "api_versions_request",
    "api_versions_round_trip",
    "recv_exactly",
]

REPO = Path(__file__).resolve().parents[1]
LISTENING = re.compile(r"listening on (\S+):(\d+)")


class ServerProcess:
    """One server subprocess; its stdout and stderr lines are collected by a reader thread."""

    def __init__(
        self, log_path: Path | None = None, env: Mapping[str, str] | None = None, name: str = "server"
    ) -> None:
        self.log_path = log_path
        self.env = {**os.environ, **(env or {})}
        self.name = name
        self.host = "127.0.0.1"
        self.port = 0
        self.proc: subprocess.Popen[str] | ForkedProcess | None = None
        self.lines: list[str] = []
        self._cond = threading.Condition()

    def argv(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> int:
        """Start the process and wait for its "listening on" line; returns the port."""
        with self._cond:
            self.lines = []
        self.proc = popen_kcoord(self.argv(), self.env) or subprocess.Popen(
            self.argv(),
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        self.port = int(self.wait_for(LISTENING, timeout).group(2))
        return self.port

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        log = self.log_path.open("a") if self.log_path is not None else None
        try:
            if log is not None:
                log.write(f"--- {self.name} pid {proc.pid} ---\n")
            for line in proc.stdout:
                if log is not None:
                    log.write(line)
                    log.flush()
                with self._cond:
                    self.lines.append(line.rstrip("\n"))
                    self._cond.notify_all()
        finally:
            if log is not None:
                log.close()
            with self._cond:
                self._cond.notify_all()

    def wait_for(
        self, pattern: re.Pattern[str] | str, timeout: float = 30.0, start: int = 0
    ) -> re.Match[str]:
        """The first output line from index `start` matching `pattern`; fails on timeout or exit."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        seen = start
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if (match := regex.search(line)) is not None:
                        return match
                seen = max(seen, len(self.lines))
                remaining = deadline - time.monotonic()
                exited = not self.alive()
                if remaining <= 0 or exited:
                    tail = "\n".join(self.lines[-40:])
                    raise AssertionError(
                        f"{self.name}: no line matching {regex.pattern!r} (exited={exited}):\n{tail}"
                    )
                self._cond.wait(min(remaining, 0.2))

    def count(self, pattern: str) -> int:
        regex = re.compile(pattern)
        with self._cond:
            return sum(1 for line in self.lines if regex.search(line))

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig` and wait for the exit code (SIGKILL if it does not exit in time).

        The handle stays: `pid` and `proc.returncode` are readable afterwards.
        """
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
        return proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def cpu_seconds(self) -> float:
        user, kernel = self.cpu_split()
        return user + kernel

    def cpu_split(self) -> tuple[float, float]:
        """(user, kernel) CPU seconds of every thread of the process so far (/proc/PID/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / ticks, int(fields[12]) / ticks

    def rss_kib(self) -> int:
        match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{self.pid}/status").read_text())
        assert match is not None
        return int(match.group(1))


class CommandProcess(ServerProcess):
    """Any program that logs "listening on host:port" (benchmarks' reference servers)."""

    def __init__(self, argv: Sequence[str], name: str) -> None:
        super().__init__(name=name)
        self._argv = list(argv)

    def argv(self) -> list[str]:
        return self._argv


class KcoordServer(ServerProcess):
    """`python -m kcoord serve` on loopback with a data directory and no initial rebalance delay.

    `extra` flags come last, so they override the ones here.
    """

    def __init__(
        self,
        data_dir: Path,
        *extra: str,
        log_path: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(log_path, env, name="kcoord")
        self.data_dir = data_dir
        self.extra: list[str] = list(extra)
        self.listen_port = 0  # reserved at the first start; `port` stays 0 until the server listens

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "kcoord", "serve",
            "--listen", f"{self.host}:{self.listen_port}",
            "--data-dir", str(self.data_dir),
            "--group-initial-rebalance-delay-ms", "0",
            *self.extra,
        ]  # fmt: skip

    def start(self, timeout: float = 30.0) -> int:
        if self.listen_port == 0:  # kept from here on: a restart listens where clients look for it
            self.listen_port = free_port()
        port = super().start(timeout)
        self.wait_answering(timeout)
        return port

    def restart(self, timeout: float = 30.0) -> None:
        """SIGTERM (if still running), then start again on the same port and data dir."""
        self.stop()
        self.start(timeout)

    def wait_answering(self, timeout: float = 10.0) -> None:
        """An ApiVersions round trip works (retried, bounded): the server is past its listen line."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(self.address, timeout=2) as sock:
                    sock.settimeout(5)
                    api_versions_round_trip(sock, 1)
                return
            except OSError as exc:
                if time.monotonic() >= deadline or not self.alive():
                    raise AssertionError(f"kcoord on {self.bootstrap} does not answer: {exc}") from exc
                time.sleep(0.05)


# -- raw wire: an ApiVersions v0 round trip, independent of our own codec -----------------------------

_CLIENT_ID = b"kcoord-it"


def api_versions_request(correlation_id: int) -> bytes:
    payload = struct.pack(">hhih", 18, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(payload)) + payload


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the server")
        buf += chunk
    return bytes(buf)


def api_versions_round_trip(sock: socket.socket, correlation_id: int) -> dict[int, tuple[int, int]]:
    """Send ApiVersions v0, check the answer, return {api_key: (min, max)}."""
    sock.sendall(api_versions_request(correlation_id))
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    payload = recv_exactly(sock, size)
    got_correlation, error_code, count = struct.unpack_from(">ihi", payload)
    assert got_correlation == correlation_id, (got_correlation, correlation_id)
    assert error_code == 0, f"ApiVersions v0 answered error {error_code}"
    keys = {}
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        keys[key] = (low, high)
    return keys
