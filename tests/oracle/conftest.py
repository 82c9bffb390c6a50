"""The oracle's fixtures: one Apache Kafka 4.3 broker (tests/oracle/kafka.py) and one kcoord server for
the whole session (per pytest-xdist worker; every test module here is in the `kafka_oracle` xdist_group
so that, with `--dist loadgroup`, only one worker starts Kafka).

Without Java or Maven Central the oracle tests skip with the reason; under KCOORD_ORACLE_TESTS=required
(the default when CI=true, as KCOORD_CLUSTER_TESTS is for tests/cluster) they fail instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kcoord_process import KcoordServer
from tests.oracle.diff import Pair, Side
from tests.oracle.kafka import KafkaOracle, OracleUnavailable, start_kafka
from tests.server.wire import connect

_MODE = os.environ.get("KCOORD_ORACLE_TESTS", "required" if os.environ.get("CI") == "true" else "")
REQUIRED = _MODE == "required"


@pytest.fixture(scope="session")
def kafka_oracle() -> Iterator[KafkaOracle]:
    """Apache Kafka 4.3.1 (KRaft, one broker+controller node) on a free 127.0.0.1 port, ready."""
    try:
        oracle = start_kafka()
    except OracleUnavailable as exc:
        if REQUIRED:
            pytest.fail(f"KCOORD_ORACLE_TESTS=required but Kafka is unavailable: {exc}")
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    print(f"kafka oracle ready in {oracle.startup_s:.1f} s on {oracle.bootstrap}", file=sys.stderr)
    try:
        yield oracle
    finally:
        oracle.stop()


@pytest.fixture(scope="session")
def kcoord_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    """The kcoord server the oracle's answers are compared with, for the whole session."""
    server = KcoordServer(Path(tmp_path_factory.mktemp("oracle-kcoord")) / "data", "--fsync", "never")
    server.start()
    try:
        yield server
    finally:
        server.kill()


def _open(kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer) -> Pair:
    return Pair(Side("kafka", connect(kafka_oracle.address)), Side("kcoord", connect(kcoord_peer.address)))


@pytest.fixture
def pair(kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer) -> Iterator[Pair]:
    """A fresh connection to each of the two brokers."""
    both = _open(kafka_oracle, kcoord_peer)
    try:
        yield both
    finally:
        both.close()


@pytest.fixture(scope="module")
def module_pair(kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer) -> Iterator[Pair]:
    """The same, for a module's shared setup."""
    both = _open(kafka_oracle, kcoord_peer)
    try:
        yield both
    finally:
        both.close()
