"""`kcoord storage verify|dump` over partition logs written by a real server and a real producer:
sealed segments with their index files verify clean, a flipped byte in a sealed segment is reported,
and the dump shows every batch and record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import unique
from tests.kcoord_fork import run_command
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _storage(command: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "storage", command, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_verify_and_dump_partition_logs(server: KcoordServer) -> None:
    topic = unique("segments")
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    # segment.bytes at Kafka's minimum (1 MiB) so 3 MiB of records seal a few segments.
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": str(1 << 20)})])[topic].result(30)
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5, "compression.type": "none"})
    for i in range(3000):
        producer.produce(topic, key=b"k%d" % i, value=b"%04d" % i + b"x" * 1020, partition=0)
    assert producer.flush(60) == 0
    server.stop()

    partition = server.data_dir / "topics" / f"{topic}-0"
    segments = sorted(partition.glob("*.log"))
    assert len(segments) >= 3
    assert all(s.with_suffix(".index").exists() for s in segments[:-1])

    verified = _storage("verify", server.data_dir)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "partition logs ok" in verified.stdout

    dumped = _storage("dump", server.data_dir)
    assert dumped.returncode == 0
    assert f"# partition {topic}-0: {len(segments)} segment(s)" in dumped.stdout
    assert "offset=2999 " in dumped.stdout and "key=b'k2999'" in dumped.stdout
    assert dumped.stdout.count("    offset=") == 3000

    data = bytearray(segments[0].read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of a record in a sealed segment
    segments[0].write_bytes(bytes(data))
    broken = _storage("verify", server.data_dir)
    assert broken.returncode == 1
    assert f"{segments[0]}: corrupt sealed segment: CRC mismatch" in broken.stdout
    assert "partition logs: 1 problem(s)" in broken.stdout
