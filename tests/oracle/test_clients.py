"""Stock clients against Apache Kafka 4.3 and kcoord: the same application (confluent-kafka, in its
own process per broker, both at once) and what it saw, compared field by field."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.kcoord_process import REPO, KcoordServer
from tests.oracle.diff import assert_same, differences, unexplained
from tests.oracle.kafka import KafkaOracle
from tests.oracle.scenario import unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")


def run_everywhere(module: str, *brokers: str) -> list[dict[str, Any]]:
    """`python -m module BOOTSTRAP TOPIC GROUP` against each broker at once; their JSON lines."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", module, bootstrap, unique("client"), unique("client")],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for bootstrap in brokers
    ]
    outputs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        assert proc.returncode == 0, f"{module} failed ({proc.returncode}):\n{err[-3000:]}"
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def test_a_confluent_kafka_application_sees_what_it_sees_on_kafka(
    kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer
) -> None:
    """Admin create (and its refusals), an idempotent producer, a group consumer that commits, then
    DescribeConsumerGroups, DeleteRecords and ListOffsets: tests/oracle/clients/confluent_scenario.py."""
    kafka, kcoord = run_everywhere(
        "tests.oracle.clients.confluent_scenario", kafka_oracle.bootstrap, kcoord_peer.bootstrap
    )
    assert len(kafka["records"]) == 10  # the scenario really ran on Kafka
    assert_same(unexplained("confluent-kafka", differences(kafka, kcoord)))
