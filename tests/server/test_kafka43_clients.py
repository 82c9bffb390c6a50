"""Issue 33 item 6 with stock clients, each in its own process against `kcoord serve`: kafka-python
infers a Kafka 4.3 broker from kcoord's ApiVersions (kafka/protocol/broker_version_data.py's
`infer_broker_version_from_api_versions`: DescribeLogDirs v5 means 4.3), and it and confluent-kafka
produce, consume and commit at the top versions they and kcoord share; and Apache Kafka 4.3's own Java
client does, by topic id, with its Admin calls on the new APIs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import jvm
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


def _java_classpath() -> str | None:
    """Kafka 4.3's client jar and slf4j-api from the local Maven repository (issue 33 item 9's Kafka
    helper fetches them from Maven Central); None when either is missing."""
    m2 = Path.home() / ".m2" / "repository"
    clients = sorted((m2 / "org/apache/kafka/kafka-clients").glob("4.3.*/kafka-clients-4.3.*.jar"))
    slf4j = sorted((m2 / "org/slf4j/slf4j-api").glob("*/slf4j-api-*.jar"))
    if not clients or not slf4j:
        return None
    return f"{clients[-1]}:{slf4j[-1]}"


def test_the_kafka_4_3_java_client_produces_consumes_commits_and_administers(server: KcoordServer) -> None:
    """Produce v13 and KIP-848 OffsetCommit/OffsetFetch v10 by topic id, Fetch v18, and the Admin calls
    behind DescribeMetadataQuorum, describeTopics (DescribeTopicPartitions), UpdateFeatures (validate
    only), AlterReplicaLogDirs and DescribeCluster v2, from Apache Kafka's own client."""
    classpath = _java_classpath()
    if shutil.which("java") is None or classpath is None:
        pytest.skip("needs a JDK and kafka-clients 4.3 in ~/.m2 (the Kafka oracle helper's cache)")
    log_dir = os.path.abspath(server.data_dir / "topics")  # as DescribeLogDirs reports it
    classes = jvm.compiled(CLIENTS / "Java43Client.java", classpath)
    out = subprocess.run(
        ["java", *jvm.SHORT_FLAGS, "-cp", f"{classes}:{classpath}", "Java43Client", server.bootstrap, "j43",
         "j43g", log_dir],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["offsets"] == ["0:0", "1:0", "0:1", "1:1", "0:2"]
    assert result["values"] == [f"v{i}" for i in range(5)] and result["read848"] == 5
    assert (result["committed"], result["committed848"]) == (2, 3)
    assert (result["quorum_leader"], result["voters"], result["observers"]) == (0, 1, 0)
    assert (result["partitions"], result["transaction_version"], result["nodes"]) == (2, 2, 1)
