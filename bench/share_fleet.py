"""Client processes for bench.share_groups: a fleet of bench/share_clients.py consumers whose per-poll
lines are added up here, one-shot client runs, and the raw-wire admin calls the bench needs."""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.kcoord_process import REPO, KcoordServer
from tests.server.wire import call, connect

INCREMENTAL_ALTER_CONFIGS, SHARE_GROUP_DESCRIBE, GROUP_RESOURCE = 44, 77, 32
MODULE = "bench.share_clients"


@contextlib.contextmanager
def admin_socket(server: KcoordServer) -> Iterator[socket.socket]:
    sock = connect(server.address, timeout=30)
    try:
        yield sock
    finally:
        sock.close()


def set_group_configs(sock: socket.socket, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs v1 of a GROUP resource, names with dots for underscores (SET each)."""
    entries = [{"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in configs.items()]
    body = {
        "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": entries}],
        "validate_only": False,
    }
    (answer,) = call(sock, INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    if answer["error_code"] != 0:
        raise RuntimeError(f"group configs of {group}: {answer['error_code']} {answer['error_message']}")


def run_client(role: str, opts: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One client process to its end; its last stdout line is the result."""
    done = subprocess.run(
        [sys.executable, "-m", MODULE, role, json.dumps(opts)],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{MODULE} {role} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@dataclass
class Seen:
    """What a fleet read: first deliveries, redeliveries, when and at which server CPU."""

    records: int = 0
    redelivered: int = 0
    after_first: int = 0  # deliveries after the first poll seen: the ones `seconds` covers
    first_at: float = 0.0  # monotonic time of the first non-empty poll seen
    done_at: float = 0.0  # of the poll that met the condition (or of the give-up)
    cpu_first: float = 0.0
    cpu_done: float = 0.0

    @property
    def seconds(self) -> float:
        return self.done_at - self.first_at

    @property
    def cpu_s(self) -> float:
        return self.cpu_done - self.cpu_first


class Fleet:
    """`count` processes of one consumer role, stopped together through a stop file."""

    def __init__(self, server: KcoordServer, role: str, opts: dict[str, Any], count: int, tmp: Path) -> None:
        self.server = server
        self.stop = tmp / f"stop-{role}-{time.monotonic_ns()}"
        self.go = tmp / f"go-{role}-{time.monotonic_ns()}"
        self.clock: tuple[float, float] | None = None  # (monotonic, server CPU) when `go` was written
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        # when each poll's line reached this process: a line that came before some instant was polled
        # before it (a wake-up of the reader after the instant cannot move a poll earlier)
        self.arrivals: list[float] = []
        self.errors: collections.deque[str] = collections.deque(maxlen=40)
        argv = [
            sys.executable,
            "-m",
            MODULE,
            role,
            json.dumps({**opts, "stop": str(self.stop), "go": str(self.go)}),
        ]
        self.procs = [
            subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(count)
        ]
        for proc in self.procs:
            threading.Thread(target=self._read, args=(proc,), daemon=True).start()
            threading.Thread(target=self._drain, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.arrivals.append(time.monotonic())
            self.lines.put(json.loads(line))

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        self.errors.extend(proc.stderr)

    def release(self, timed: bool = True) -> None:
        """Let the consumers poll (they wait for the `go` file after subscribing); `timed`: the read is
        timed from now rather than from the first poll seen."""
        if timed:
            self.clock = (time.monotonic(), self.server.cpu_seconds())
        self.go.touch()

    def until(self, done: Callable[[int, int], bool], timeout: float) -> Seen:
        """Adds up the fleet's polls until done(first deliveries, redeliveries) holds or `timeout`."""
        seen = Seen()
        if self.clock is not None:  # timed from the release: every record counts
            seen.first_at, seen.cpu_first = self.clock
        deadline = time.monotonic() + timeout
        while not done(seen.records, seen.redelivered) and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if not any(proc.poll() is None for proc in self.procs):
                    break  # every consumer is gone: nothing more will come
                continue
            if "n" not in line:
                continue
            if seen.first_at == 0.0:  # timed from the first poll seen: its records are not in the rate
                seen.first_at, seen.cpu_first = time.monotonic(), self.server.cpu_seconds()
            else:
                seen.after_first += line["n"]
            seen.records += line["n"] - line["re"]
            seen.redelivered += line["re"]
        seen.done_at, seen.cpu_done = time.monotonic(), self.server.cpu_seconds()
        return seen

    def await_members(self, group: str, count: int, timeout: float) -> bool:
        """Whether `count` members of share group `group` hold an assignment of the current epoch within
        `timeout` (ShareGroupDescribe v1, asked every 50 ms)."""
        deadline = time.monotonic() + timeout
        with admin_socket(self.server) as sock:
            while time.monotonic() < deadline:
                body = {"group_ids": [group], "include_authorized_operations": False}
                (described,) = call(sock, SHARE_GROUP_DESCRIBE, 1, body)["groups"]
                members = described["members"] if described["error_code"] == 0 else []
                settled = [m for m in members if m["assignment"]["topic_partitions"]
                           and m["member_epoch"] == described["assignment_epoch"]]  # fmt: skip
                if len(members) == len(settled) == count:
                    return True
                time.sleep(0.05)
        return False

    def __enter__(self) -> Fleet:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.touch()
        failed = []
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.returncode != 0:
                failed.append(proc.returncode)
        if failed and kind is None:
            raise RuntimeError(f"{MODULE}: exit codes {failed}:\n{''.join(self.errors)}")
