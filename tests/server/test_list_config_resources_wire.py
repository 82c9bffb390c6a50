"""ListConfigResources (74) on the wire (real server, raw socket): advertised v0-1; v1 lists the topics,
this broker and the groups with configs of their own, filtered by the requested types; a type v1 does
not know is UNSUPPORTED_VERSION; v0 (ListClientMetricsResources) lists client metrics only: none here.
As Kafka's KafkaApis.handleListConfigResources."""

from __future__ import annotations

import socket

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@pytest.fixture
def sock(server: KcoordServer) -> socket.socket:
    return connect(server.address)


def _listed(sock: socket.socket, types: list[int], version: int = 1) -> tuple[int, list[tuple[str, int]]]:
    answer = call(sock, 74, version, {"resource_types": types} if version else {})
    return answer["error_code"], [
        (r["resource_name"], r["resource_type"]) for r in answer["config_resources"]
    ]


def test_advertised_and_lists_topics_brokers_and_configured_groups(sock: socket.socket) -> None:
    versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in call(sock, 18, 3, {
        "client_software_name": "t", "client_software_version": "1"})["api_keys"]}  # fmt: skip
    assert versions[74] == (0, 1)
    for name in ("b", "a"):
        assert create_topic(sock, name, 1)["error_code"] == ErrorCode.NONE
    entry = {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}
    body = {
        "resources": [{"resource_type": GROUP, "resource_name": "g1", "configs": [entry]}],
        "validate_only": False,
    }
    assert call(sock, 44, 1, body)["responses"][0]["error_code"] == ErrorCode.NONE
    error, listed = _listed(sock, [])
    assert error == ErrorCode.NONE
    assert listed == [("g1", GROUP), ("0", BROKER), ("a", TOPIC), ("b", TOPIC)]
    assert _listed(sock, [TOPIC]) == (ErrorCode.NONE, [("a", TOPIC), ("b", TOPIC)])
    assert _listed(sock, [GROUP, BROKER_LOGGER, CLIENT_METRICS]) == (ErrorCode.NONE, [("g1", GROUP)])
    assert _listed(sock, [1]) == (ErrorCode.UNSUPPORTED_VERSION, [])


def test_v0_lists_client_metrics_only(sock: socket.socket) -> None:
    assert create_topic(sock, "a", 1)["error_code"] == ErrorCode.NONE
    answer = call(sock, 74, 0, {})
    assert (answer["error_code"], answer["config_resources"]) == (ErrorCode.NONE, [])
