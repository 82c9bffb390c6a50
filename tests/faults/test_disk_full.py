"""A full disk (a real tmpfs, filled up) under commit and produce load: refused with Kafka's codes, served
throughout, quiet logs, resumed within 1 s of space returning, nothing acknowledged lost after kill -9.
Commits come from the raw wire (every answer checked) and from a stock kafka-python consumer in its
own process (refused while full, acknowledged after)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaStorageError

from tests.faults.conftest import KAFKA_STORAGE_ERROR, NONE, NOT_COORDINATOR, Tmpfs, commit, committed
from tests.kcoord_process import REPO, KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.wire import call, connect, create_topic

FULL_FOR_S = 11.5  # longer than the 10 s reminder interval: the reminder shows at most once


def _health(server: KcoordServer, http_address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kcoord",
            "health",
            "--bootstrap",
            server.bootstrap,
            "--http",
            http_address,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _stock_commit(server: KcoordServer, offset: int) -> bool:
    """A kafka-python consumer commits `offset` for group "stock" in its own process; True if acknowledged."""
    argv = ["commit", server.bootstrap, "stock", "t", f"0={offset}"]
    done = subprocess.run(
        [sys.executable, "-m", "tests.container.client", *argv],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return done.returncode == 0


def test_disk_full_under_commit_and_produce_load(tmpfs: Tmpfs) -> None:
    server = KcoordServer(tmpfs.path / "data", "--fsync", "always", "--http-listen", "127.0.0.1:0")
    server.start()
    http = server.wait_for(r"http endpoint on (\S+):(\d+)", 10)
    http_address = f"{http.group(1)}:{http.group(2)}"
    producer = None
    try:
        with connect(server.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == NONE
            producer = KafkaProducer(
                bootstrap_servers=server.bootstrap,
                acks="all",
                retries=0,
                max_in_flight_requests_per_connection=1,
            )
            acked_values: list[bytes] = []
            acked_commit = -1
            for i in range(20):
                assert commit(sock, i) == NONE
                acked_commit = i
                producer.send("t", b"v%d" % i, partition=0).get(timeout=10)
                acked_values.append(b"v%d" % i)

            assert _stock_commit(server, 3)
            filler = tmpfs.fill()
            first_line = len(server.lines)
            codes: list[int] = []
            storage_errors = 0
            i = 1000
            started = time.monotonic()
            while time.monotonic() - started < FULL_FOR_S:
                i += 1
                code = commit(sock, i)
                codes.append(code)
                if code == NONE:
                    acked_commit = i
                value = b"v%d" % i
                try:
                    producer.send("t", value, partition=0).get(timeout=10)
                    acked_values.append(value)
                except KafkaStorageError:
                    storage_errors += 1
                assert committed(sock) == acked_commit  # reads are served throughout
                metadata = call(sock, 3, 4, {"topics": None, "allow_auto_topic_creation": False})
                # (a group's first commit makes __consumer_offsets, as on Kafka)
                assert [t["name"] for t in metadata["topics"] if t["name"] != "__consumer_offsets"] == ["t"]
                time.sleep(0.02)
            assert set(codes) <= {NONE, NOT_COORDINATOR} and codes.count(NOT_COORDINATOR) > 10, codes[:20]
            # On the wire, a refused Produce carries KAFKA_STORAGE_ERROR (kafka-python raised it above).
            raw = produce(sock, "t", 0, batch(50, size=4000))
            assert raw["error_code"] == KAFKA_STORAGE_ERROR and raw["base_offset"] == -1, raw
            assert storage_errors > 10, "Produce is refused with KAFKA_STORAGE_ERROR while the disk is full"
            assert not _stock_commit(server, 4), "a stock client's commit was acknowledged on a full disk"
            noisy = [
                line for line in server.lines[first_line:] if "kcoord.storage" in line or " ERROR " in line
            ]
            assert server.count("storage: refusing writes") == 1
            # `kcoord health` (the container's HEALTHCHECK) reports not ready, with the reason.
            unhealthy = _health(server, http_address)
            assert unhealthy.returncode == 1 and "not ready (503)" in unhealthy.stderr, unhealthy.stderr
            assert len(noisy) <= 2, "at most the start line and one reminder in 11.5 s:\n" + "\n".join(noisy)

            filler.unlink()  # space returns: writes resume by themselves
            returned = time.monotonic()
            while commit(sock, i + 1) != NONE:
                assert time.monotonic() - returned < 1.0, "commits did not resume within 1 s"
            acked_commit = i + 1
            assert time.monotonic() - returned < 1.0
            producer.send("t", b"after", partition=0).get(timeout=10)
            acked_values.append(b"after")
            deadline = time.monotonic() + 5  # the end line follows 1 s without a refused write
            while not server.count("storage writes accepted again"):
                assert time.monotonic() < deadline, "no end line"
                i += 1
                assert commit(sock, i + 1) == NONE
                acked_commit = i + 1
                time.sleep(0.1)
            assert _stock_commit(server, 5)
            assert server.alive()
            healthy = _health(server, http_address)
            assert healthy.returncode == 0, healthy.stderr
        producer.close()
        producer = None
        server.stop(signal.SIGKILL)

        server.start()
        with connect(server.address) as sock:
            assert committed(sock) == acked_commit
            assert committed(sock, group="stock") == 5
        consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, consumer_timeout_ms=3000)
        consumer.assign([TopicPartition("t", 0)])
        consumer.seek_to_beginning()
        values = [record.value for record in consumer]
        consumer.close()
        assert set(acked_values) <= set(values), set(acked_values) - set(values)
    finally:
        if producer is not None:
            producer.close()
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-40:]))
