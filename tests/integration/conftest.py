"""Fixtures for the real-client acceptance suite: a real `kcoord serve` subprocess and consumer workers.

Every process is started here and stopped here by its PID (SIGKILL at teardown at the latest). Waits
are bounded polls on a condition (`wait_until`), never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import resource
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.integration.producers import ProducerProcess
from tests.json_lines_process import JsonLinesProcess
from tests.kcoord_process import KcoordServer, api_versions_round_trip

CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")
WORKER_MODULES = {
    "kafka-python": "tests.integration.workers.kpy_consumer",
    "confluent-kafka": "tests.integration.workers.ck_consumer",
    "aiokafka": "tests.integration.workers.aio_consumer",
}

T = TypeVar("T")
Partition = tuple[str, int]


# -- waiting ----------------------------------------------------------------------------------------


def wait_until(condition: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll `condition` until it returns something truthy (returned); AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


class Prober:
    """A background client doing ApiVersions round trips on its own connections while a test abuses the
    server: every round trip must succeed, promptly (`failures`, `max_latency`)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.round_trips = 0
        self.failures: list[str] = []
        self.max_latency = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        wait_until(lambda: self.round_trips or self.failures, 10, "the first probe round trip")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        correlation = itertools.count(1)
        while not self._stop.is_set():
            try:
                with socket.create_connection(self.address, timeout=5) as sock:
                    sock.settimeout(5)
                    for _ in range(20):  # a few round trips per connection, then a fresh connection
                        started = time.monotonic()
                        api_versions_round_trip(sock, next(correlation))
                        self.max_latency = max(self.max_latency, time.monotonic() - started)
                        self.round_trips += 1
                        if self._stop.wait(0.01):
                            return
            except (OSError, AssertionError) as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
                self._stop.wait(0.1)

    def check(self, max_latency: float = 2.0) -> None:
        """The server answered every probe, each within `max_latency` seconds."""
        assert not self.failures, f"probes failed while the server was abused: {self.failures[:5]}"
        assert self.max_latency < max_latency, f"a probe took {self.max_latency:.2f}s"
        assert self.round_trips > 0


# -- the server ---------------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KcoordServer]:
    """A running `kcoord serve` on a free loopback port with a fresh data dir; killed at teardown.

    Extra server flags: `@pytest.mark.server_args("--fsync", "never")`.
    """
    marker = request.node.get_closest_marker("server_args")
    extra = ("--group-min-session-timeout-ms", "1000", *(marker.args if marker else ()))
    srv = KcoordServer(tmp_path / "data", *extra, log_path=tmp_path / "server.log")
    try:
        srv.start()
        yield srv
    finally:
        srv.kill()
        _attach_log(request, "server log", tmp_path / "server.log")


def _attach_log(request: pytest.FixtureRequest, title: str, path: Path) -> None:
    """On failure, show the tail of a log under the test report."""
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed and path.exists():
        tail = path.read_text(errors="replace").splitlines()[-80:]
        request.node.add_report_section("call", title, "\n".join(tail))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


# -- consumer workers ---------------------------------------------------------------------------------


class Worker(JsonLinesProcess):
    """One consumer in its own OS process, reporting JSON lines (see `workers/common.py`)."""

    _ids = itertools.count(1)

    def __init__(self, client: str, options: dict[str, Any], log_path: Path) -> None:
        self.client = client
        self.name = options["client_id"]
        self.events: list[dict[str, Any]] = []
        self.assignment: frozenset[Partition] = frozenset()
        self.assignment_changes = 0
        super().__init__(WORKER_MODULES[client], options, log_path, stdin=True)

    def __repr__(self) -> str:
        return f"<{self.client} {self.name} pid={self.proc.pid}>"

    def on_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event["event"] == "assignment":
            self.assignment = frozenset((t, p) for t, p in event["partitions"])
            self.assignment_changes += 1

    def wait_event(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float, what: str
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise AssertionError(
                        f"{self}: no event {what} within {timeout:.1f}s (alive={self.alive()}); "
                        f"last events {self.events[-5:]}\nstderr:\n{self.stderr_tail()}"
                    )
                self._cond.wait(min(remaining, 0.2))

    def events_named(self, name: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["event"] == name]

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def request(self, command: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """Send a command with a fresh id and wait for its `done`/`failed` answer."""
        command_id = next(self._ids)
        self.send({**command, "id": command_id})
        return self.wait_event(
            lambda e: e["event"] in ("done", "failed") and e.get("id") == command_id,
            timeout,
            f"answer to {command['cmd']} #{command_id}",
        )

    def commit(self, offsets: Iterable[tuple[str, int, int, str]], timeout: float = 30.0) -> None:
        """Commit, retrying while the group rebalances (bounded)."""
        offsets = [list(o) for o in offsets]

        def attempt() -> bool:
            answer = self.request({"cmd": "commit", "offsets": offsets}, timeout=15)
            return answer["event"] == "done"

        wait_until(attempt, timeout, f"{self} to commit {offsets}", interval=0.3)

    def committed(self, partitions: Iterable[Partition]) -> dict[Partition, tuple[int, str]]:
        answer = self.request({"cmd": "committed", "partitions": [list(p) for p in partitions]})
        assert answer["event"] == "done", f"{self}: committed failed: {answer}"
        return {(t, p): (offset, metadata) for t, p, offset, metadata in answer["offsets"]}

    def close(self, timeout: float = 30.0) -> None:
        """Graceful close (LeaveGroup unless static) and wait for the process to exit."""
        if self.alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self.send({"cmd": "close"})
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            self.kill()
            raise AssertionError(f"{self} did not close within {timeout}s:\n{self.stderr_tail()}") from exc

    def kill(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def cleanup(self) -> None:
        if self.alive():
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self._log.close()


class Workers:
    """Factory for consumer workers of one test; all of them are killed at teardown."""

    def __init__(self, server: KcoordServer, tmp_path: Path) -> None:
        self.server = server
        self.tmp_path = tmp_path
        self.all: list[Worker] = []

    def spawn(self, client: str, group: str, topics: list[str], **options: Any) -> Worker:
        name = options.pop("client_id", None) or f"{client}-{len(self.all) + 1}"
        opts = {
            "bootstrap": self.server.bootstrap,
            "group": group,
            "topics": topics,
            "client_id": name,
            **options,
        }
        worker = Worker(client, opts, self.tmp_path / f"worker-{len(self.all) + 1}-{name}.log")
        self.all.append(worker)
        return worker

    def cleanup(self) -> None:
        for worker in self.all:
            worker.cleanup()


@pytest.fixture
def workers(server: KcoordServer, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Workers]:
    factory = Workers(server, tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()
        for worker in factory.all:
            _attach_log(request, f"{worker.name} stderr", worker.log_path)


# -- assertions on a group ----------------------------------------------------------------------------


def partitions_of(topic: str, count: int) -> frozenset[Partition]:
    return frozenset((topic, p) for p in range(count))


def split_problem(members: list[Worker], expected: frozenset[Partition]) -> str | None:
    """None when the members' assignments cover `expected` exactly once, balanced; else what is wrong."""
    owned = [m.assignment for m in members]
    union = frozenset().union(*owned)
    total = sum(len(a) for a in owned)
    if union != expected:
        return f"union {sorted(union)} != {sorted(expected)}"
    if total != len(expected):
        return f"some partition is owned twice: {[sorted(a) for a in owned]}"
    sizes = [len(a) for a in owned]
    if max(sizes) - min(sizes) > 1:
        return f"unbalanced {sizes}"
    return None


def wait_for_split(members: list[Worker], expected: frozenset[Partition], timeout: float = 45.0) -> None:
    """Wait until every partition of `expected` is owned by exactly one member, balanced."""
    for member in members:
        assert member.alive(), f"{member} exited:\n{member.stderr_tail()}"

    def ok() -> bool:
        dead = [m for m in members if not m.alive()]
        assert not dead, f"{dead} exited:\n{dead[0].stderr_tail()}"
        return split_problem(members, expected) is None

    try:
        wait_until(ok, timeout, "the group to split the partitions")
    except AssertionError as exc:
        state = {m.name: sorted(m.assignment) for m in members}
        raise AssertionError(f"{exc}: {split_problem(members, expected)}; assignments {state}") from None


# -- admin helpers ------------------------------------------------------------------------------------


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """CreateTopics through our server with confluent-kafka's AdminClient."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(timeout=30)


TOPIC_PARTITIONS = 6


@pytest.fixture
def topic(server: KcoordServer) -> str:
    """A fresh topic of TOPIC_PARTITIONS partitions, created through our server."""
    name = unique("orders")
    create_topic(server.bootstrap, name, TOPIC_PARTITIONS)
    return name


@pytest.fixture
def topic_partitions(topic: str) -> frozenset[Partition]:
    """Every partition of `topic`."""
    return partitions_of(topic, TOPIC_PARTITIONS)


def raise_open_files_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# -- producers ------------------------------------------------------------------------------------------


class Producers:
    """Factory for producer processes of one test; all of them are killed at teardown."""

    def __init__(self, server: KcoordServer, tmp_path: Path) -> None:
        self.server = server
        self.tmp_path = tmp_path
        self.all: list[ProducerProcess] = []

    def spawn(self, client: str, topic: str, count: int, keys: int = 50, **options: Any) -> ProducerProcess:
        opts = {
            "client": client,
            "bootstrap": self.server.bootstrap,
            "topic": topic,
            "count": count,
            "keys": keys,
            "client_id": f"{client}-producer-{len(self.all) + 1}",
            **options,
        }
        producer = ProducerProcess(opts, self.tmp_path / f"producer-{len(self.all) + 1}-{client}.log")
        self.all.append(producer)
        return producer

    def cleanup(self) -> None:
        for producer in self.all:
            producer.cleanup()


@pytest.fixture
def producers(server: KcoordServer, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Producers]:
    factory = Producers(server, tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()
        for producer in factory.all:
            _attach_log(request, f"{producer} stderr", producer.log_path)
