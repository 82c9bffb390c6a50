"""confluent-kafka 2.16's ShareConsumer (librdkafka's KIP-932 share consumer) against a real kcoord, each
consumer in a process of its own (tests/server/clients/confluent_share_consumer.py): several consumers
of one partition never hold the same record at once; explicit RELEASE redelivers, REJECT never; a stalled
holder's records are delivered again once their acquisition lock expires, a killed holder's at once.
"""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.test_share_fetch_wire import set_group_configs
from tests.server.wire import connect, create_topic

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests" / "server" / "clients" / "confluent_share_consumer.py"
TOPIC = "shared"


class Consumer:
    """One ShareConsumer process; its JSON lines arrive on `lines`."""

    def __init__(
        self, server: KcoordServer, group: str, mode: str, stop: Path, actions: dict[str, Any]
    ) -> None:
        argv = [
            sys.executable,
            str(DRIVER),
            server.bootstrap,
            TOPIC,
            group,
            mode,
            str(stop),
            json.dumps(actions),
        ]
        self.proc = subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def _read_errors(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def finish(self) -> list[dict[str, Any]]:
        """Waits (bounded) for the process to close its consumer and exit; what it printed last."""
        assert self.proc.wait(60) == 0, "".join(self.stderr[-40:])
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get())
        return rest


def collect(consumers: list[Consumer], done: Any, timeout: float = 60.0) -> list[tuple[int, int, int]]:
    """(consumer index, offset, delivery count) of every delivery until `done(deliveries)` holds."""
    deliveries: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + timeout
    while not done(deliveries):
        assert time.monotonic() < deadline, f"only {deliveries}"
        for index, consumer in enumerate(consumers):
            try:
                line = consumer.lines.get(timeout=0.05)
            except queue.Empty:
                continue
            deliveries += [(index, offset, count) for _, offset, count in line.get("got", [])]
    return deliveries


@pytest.fixture
def conn(server: KcoordServer) -> socket.socket:
    sock = connect(server.address)
    assert create_topic(sock, TOPIC, 1)["error_code"] == ErrorCode.NONE
    return sock


@pytest.fixture
def stop(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "stop"
    yield path
    path.touch()  # whatever happened, the consumers stop


def test_consumers_of_one_partition_never_share_a_record(
    server: KcoordServer, conn: socket.socket, stop: Path
) -> None:
    set_group_configs(conn, "implicit", share_auto_offset_reset="earliest")
    consumers = [Consumer(server, "implicit", "implicit", stop, {}) for _ in range(3)]
    for first in range(0, 300, 10):
        assert produce(conn, TOPIC, 0, batch(10, first=first))["error_code"] == ErrorCode.NONE
    deliveries = collect(consumers, lambda got: len({offset for _, offset, _ in got}) == 300)
    offsets = [offset for _, offset, _ in deliveries]
    assert sorted(offsets) == list(range(300))  # each record once: accepted records are never redelivered
    stop.touch()
    for consumer in consumers:
        assert consumer.finish()[-1] == {"closed": True}


def test_explicit_release_redelivers_and_reject_does_not(
    server: KcoordServer, conn: socket.socket, stop: Path
) -> None:
    set_group_configs(conn, "explicit", share_auto_offset_reset="earliest")
    assert produce(conn, TOPIC, 0, batch(10))["error_code"] == ErrorCode.NONE
    consumer = Consumer(server, "explicit", "explicit", stop, {"2": "release", "5": "reject"})
    deliveries = collect([consumer], lambda got: (0, 2, 2) in got)
    assert sorted({offset for _, offset, _ in deliveries}) == list(range(10))
    # a second bounded look for anything else: 5 was rejected, the rest accepted
    produce(conn, TOPIC, 0, batch(1, first=10))
    deliveries += collect([consumer], lambda got: any(offset == 10 for _, offset, _ in got))
    stop.touch()
    consumer.finish()
    redelivered = sorted((offset, count) for _, offset, count in deliveries if count > 1)
    assert redelivered == [(2, 2)]


def test_a_stalled_holders_records_come_back_once_the_lock_expires(
    server: KcoordServer, conn: socket.socket, stop: Path
) -> None:
    """The holder keeps its connection (librdkafka heartbeats on) but acknowledges nothing: its records
    are acquirable again only when their lock expires (SharePartition's acquisition lock timer), and
    are delivered for the second time."""
    # the shortest lock a group may have: group.share.min.record.lock.duration.ms, 15 s
    set_group_configs(
        conn, "stall", share_auto_offset_reset="earliest", share_record_lock_duration_ms="15000"
    )
    assert produce(conn, TOPIC, 0, batch(3))["error_code"] == ErrorCode.NONE
    holder = Consumer(server, "stall", "explicit", stop, {"hold": True})
    try:
        assert collect([holder], lambda got: len(got) == 3) == [(0, 0, 1), (0, 1, 1), (0, 2, 1)]
        taker = Consumer(server, "stall", "implicit", stop, {})
        started = time.monotonic()
        redelivered = collect([taker], lambda got: len(got) >= 3, timeout=60)
        assert sorted((offset, count) for _, offset, count in redelivered) == [(0, 2), (1, 2), (2, 2)]
        assert time.monotonic() - started > 5  # not before the lock (taken ~15 s before) ran out
        stop.touch()
        taker.finish()
    finally:
        holder.proc.kill()
        holder.proc.wait(30)


def test_a_killed_holders_records_come_back_at_once(
    server: KcoordServer, conn: socket.socket, stop: Path
) -> None:
    """Its connection closes: the share session it opened ends and its records are released at once
    (ShareSessionCache's ClientConnectionDisconnectListener), their delivery count kept as Kafka 4.3.1
    keeps it (tests/share), long before the 30 s lock would expire."""
    set_group_configs(conn, "killed", share_auto_offset_reset="earliest")
    assert produce(conn, TOPIC, 0, batch(3))["error_code"] == ErrorCode.NONE
    holder = Consumer(server, "killed", "explicit", stop, {"hold": True})
    assert collect([holder], lambda got: len(got) == 3) == [(0, 0, 1), (0, 1, 1), (0, 2, 1)]
    holder.proc.kill()
    holder.proc.wait(30)
    taker = Consumer(server, "killed", "implicit", stop, {})
    redelivered = collect([taker], lambda got: len(got) >= 3, timeout=20)
    assert sorted((offset, count) for _, offset, count in redelivered) == [(0, 2), (1, 2), (2, 2)]
    stop.touch()
    taker.finish()
