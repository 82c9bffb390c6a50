"""Shared plumbing of the consumer workers: JSON lines out, JSON-line commands in.

A worker is started as `python -m tests.integration.workers.<client>_consumer '<json options>'`.
It reports on stdout, one JSON object per line:

    {"event": "started"}
    {"event": "assignment", "partitions": [[topic, partition], ...]}   # whenever it changes
    {"event": "assigned" | "revoked" | "lost", "partitions": [...]}    # rebalance callbacks

Every event also carries "t", the monotonic clock when it was emitted.
    {"event": "done", "id": N, ...}  /  {"event": "failed", "id": N, "error": "..."}  # command results
    {"event": "closed"}

With the `consume` option the worker also reports what it reads and commits after every poll:

    {"event": "records", "records": [[topic, partition, offset, key], ...]}
    {"event": "committed", "offsets": [[topic, partition, next_offset], ...]}
    {"event": "commit_failed", ...}

and reads commands on stdin, one JSON object per line:

    {"cmd": "commit", "id": N, "offsets": [[topic, partition, offset, metadata], ...]}
    {"cmd": "committed", "id": N, "partitions": [[topic, partition], ...]}
        -> {"event": "done", "id": N, "offsets": [[topic, partition, offset, metadata], ...]}
    {"cmd": "close"}

End of stdin (the test went away) closes the consumer too.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Commands", "Options", "WorkerLoop", "emit", "partitions_json", "report_commit", "report_records"]

_out_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    """One JSON line; `t` is the system-wide monotonic clock, comparable across the workers."""
    line = json.dumps({"event": event, "t": time.monotonic(), **fields})
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def partitions_json(tps: Any) -> list[list[Any]]:
    """Sorted [[topic, partition], ...] from any iterable of objects with .topic and .partition."""
    return sorted([tp.topic, tp.partition] for tp in tps)


@dataclass(frozen=True)
class Options:
    bootstrap: str
    group: str
    topics: list[str]
    client_id: str
    assignor: str = "range"
    session_timeout_ms: int = 3000
    heartbeat_interval_ms: int = 300
    max_poll_interval_ms: int = 30000
    metadata_max_age_ms: int = 1000
    group_instance_id: str | None = None
    consume: bool = False  # report every record read and commit after each poll
    # "consumer": KIP-848's protocol (confluent-kafka only); the server assigns, with `remote_assignor`
    group_protocol: str = "classic"
    remote_assignor: str | None = None

    @classmethod
    def from_argv(cls) -> Options:
        return cls(**json.loads(sys.argv[1]))

    def python_client_settings(self) -> dict[str, Any]:
        """Consumer settings under the names kafka-python and aiokafka share (not the assignor)."""
        return dict(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.client_id,
            group_instance_id=self.group_instance_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms,
            metadata_max_age_ms=self.metadata_max_age_ms,
            retry_backoff_ms=100,
        )


def report_records(records: Iterable[tuple[str, int, int, bytes | None]]) -> dict[tuple[str, int], int]:
    """Emit one "records" event (nothing for an empty poll); the next offset to commit per partition."""
    rows = [[t, p, offset, None if key is None else key.decode()] for t, p, offset, key in records]
    if not rows:
        return {}
    emit("records", records=rows)
    positions: dict[tuple[str, int], int] = {}
    for t, p, offset, _ in rows:
        positions[(t, p)] = max(positions.get((t, p), 0), offset + 1)
    return positions


def report_commit(positions: dict[tuple[str, int], int], error: BaseException | None) -> None:
    if error is not None:
        emit("commit_failed", error=f"{type(error).__name__}: {error}")
    else:
        emit("committed", offsets=sorted([t, p, o] for (t, p), o in positions.items()))


class Commands:
    """Reads stdin on a daemon thread; the client loop drains `pending()` between polls."""

    def __init__(self) -> None:
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self._queue.put(json.loads(line))
        self._queue.put({"cmd": "close"})  # the test closed our stdin or died

    def pending(self) -> list[dict[str, Any]]:
        items = []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items


class WorkerLoop:
    """What every worker does between two polls of its client, whatever the client.

    `WorkerLoop()` emits "started"; `run` (or `run_async` for an asyncio client) then polls the
    client, reports a changed assignment and runs the commands read meanwhile, until a close.
    """

    def __init__(self) -> None:
        emit("started")
        self.closing = False
        self._commands = Commands()
        self._reported: list[list[Any]] | None = None

    def tick(self, assignment: Iterable[Any]) -> list[dict[str, Any]]:
        """Report a changed assignment; the commands to run now (those before a close)."""
        current = partitions_json(assignment)
        if current != self._reported:
            emit("assignment", partitions=current)
            self._reported = current
        ready = []
        for cmd in self._commands.pending():
            if cmd["cmd"] == "close":
                self.closing = True
                break
            ready.append(cmd)
        return ready

    @contextlib.contextmanager
    def reporting(self, cmd: dict[str, Any]) -> Iterator[None]:
        """A command that raises is answered with a "failed" event; the worker goes on."""
        try:
            yield
        except Exception as exc:
            emit("failed", id=cmd.get("id"), error=f"{type(exc).__name__}: {exc}")

    def closed(self) -> None:
        emit("closed")

    def run(
        self,
        poll: Callable[[], object],
        assignment: Callable[[], Iterable[Any]],
        handle: Callable[[dict[str, Any]], None],
        close: Callable[[], object],
    ) -> None:
        """Poll, report and run commands until a close command (or end of stdin); close the client."""
        while not self.closing:
            poll()
            for cmd in self.tick(assignment()):
                with self.reporting(cmd):
                    handle(cmd)
        close()
        self.closed()

    async def run_async(
        self,
        poll: Callable[[], Awaitable[object]],
        assignment: Callable[[], Iterable[Any]],
        handle: Callable[[dict[str, Any]], Awaitable[None]],
        close: Callable[[], Awaitable[object]],
    ) -> None:
        """`run` for an asyncio client: the same steps, each awaited."""
        while not self.closing:
            await poll()
            for cmd in self.tick(assignment()):
                with self.reporting(cmd):
                    await handle(cmd)
        await close()
        self.closed()
