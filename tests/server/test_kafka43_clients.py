"""Issue 33 item 6 with stock clients, each in its own process against `kcoord serve`: kafka-python
infers a Kafka 4.3 broker from kcoord's ApiVersions (kafka/protocol/broker_version_data.py's
`infer_broker_version_from_api_versions`: DescribeLogDirs v5 means 4.3), and it and confluent-kafka
produce, consume and commit at the top versions they and kcoord share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.kcoord_process import REPO, KcoordServer

CLIENTS = Path(__file__).parent / "clients"


def _run(script: str, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(CLIENTS / script), *args], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_kafka_python_infers_kafka_4_3_and_produces_consumes_commits(server: KcoordServer) -> None:
    result = _run("kafka_python_kafka43.py", server.bootstrap, "k43-topic", "k43-group")
    assert result["producer_api_version"] == result["consumer_api_version"] == [4, 3]
    assert result["offsets"] == [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1], [1, 2]]
    assert result["values"] == [f"v{i}" for i in range(7)]
    assert result["committed"] == [3, "k43"]


def test_confluent_kafka_produces_consumes_commits_and_describes(server: KcoordServer) -> None:
    result = _run("confluent_kafka43.py", server.bootstrap, "ck43-topic", "ck43-group")
    assert result["values"] == [f"v{i}" for i in range(6)]
    assert result["committed"] == 2
    assert (result["partitions"], result["leaders"]) == ([0, 1, 2], [0])
