"""ApiVersions against Apache Kafka 4.3: every API's range, and what a broker does with a version or
an API it does not serve.

kcoord may differ from Kafka's range only where docs/compat.md says (tests/oracle/known.py); every
other difference is a finding, marked xfail(strict=True) below with what was seen, so that the test
turns red the day it is fixed and the mark must go.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest

from tests.kcoord_process import KcoordServer, recv_exactly
from tests.oracle.diff import Pair, Side, assert_same, differences, unexplained
from tests.oracle.kafka import KafkaOracle
from tests.server.wire import connect, is_closed

pytestmark = pytest.mark.xdist_group("kafka_oracle")

ALL_API_KEYS = range(0, 93)  # org.apache.kafka.common.protocol.ApiKeys in 4.3: 0 (Produce) .. 92

_OLD = "kcoord still serves versions Kafka 4 removed (KIP-896), not in docs/compat.md"
_NEW = "issue 33 item 6: kcoord stops short of Kafka 4.3's newest version"
_NONE = "issue 33 item 6: Kafka 4.3 serves it, kcoord does not"
# Seen against Kafka 4.3.1 (kafka vs kcoord): api key -> the finding. Routed, not excused.
FINDINGS: dict[int, str] = {}  # none left: issue 33 item 6 brought every range to Kafka 4.3's


def _param(key: int) -> Any:
    if key in FINDINGS:
        return pytest.param(key, marks=pytest.mark.xfail(strict=True, reason=FINDINGS[key]))
    return key


@pytest.fixture(scope="module")
def ranges(kafka_oracle: KafkaOracle, kcoord_peer: KcoordServer) -> dict[str, dict[int, Any]]:
    """ApiVersions v3 from each broker, once: {side: {api_key: entry}}."""
    answers: dict[str, dict[int, Any]] = {}
    for name, address in (("kafka", kafka_oracle.address), ("kcoord", kcoord_peer.address)):
        with connect(address) as sock:
            hello = {"client_software_name": "oracle", "client_software_version": "1"}
            body = Side(name, sock).call(18, 3, hello)
        assert body["error_code"] == 0, (name, body["error_code"])
        answers[name] = {entry["api_key"]: entry for entry in body["api_keys"]}
    return answers


@pytest.mark.parametrize("api_key", [_param(key) for key in ALL_API_KEYS])
def test_api_version_range_matches_kafka(ranges: dict[str, dict[int, Any]], api_key: int) -> None:
    # Keyed as diff.normalize keys a list: an API one side lacks is the path api_keys.api_key=N.
    kafka, kcoord = ({"api_keys": _entry(ranges[side], api_key)} for side in ("kafka", "kcoord"))
    assert_same(unexplained("ApiVersions", differences(kafka, kcoord)))


def _entry(answer: dict[int, Any], api_key: int) -> dict[str, Any]:
    return {f"api_key={api_key}": answer[api_key]} if api_key in answer else {}


def _raw_request(api_key: int, version: int, flexible: bool, body: bytes = b"") -> bytes:
    client = b"oracle"
    payload = struct.pack(">hhih", api_key, version, 7, len(client)) + client
    payload += (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(payload)) + payload


def _read_v0_api_versions(sock: socket.socket) -> tuple[int, dict[int, tuple[int, int]]]:
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    payload = recv_exactly(sock, size)
    correlation_id, error_code, count = struct.unpack_from(">ihi", payload)
    assert correlation_id == 7
    entries = [struct.unpack_from(">hhh", payload, 10 + 6 * i) for i in range(count)]
    return error_code, {key: (low, high) for key, low, high in entries}


def test_api_versions_of_an_unknown_version_answers_unsupported_with_its_own_range(pair: Pair) -> None:
    """KIP-511: a v0-layout body with UNSUPPORTED_VERSION (35) and at least ApiVersions' own range."""
    seen = {}
    for side in (pair.kafka, pair.kcoord):
        side.sock.sendall(_raw_request(18, 127, flexible=True, body=b"\x00\x00\x00"))
        error_code, entries = _read_v0_api_versions(side.sock)
        seen[side.name] = (error_code, entries.get(18))
    assert seen["kcoord"] == seen["kafka"], seen


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(12, 99), (3, 127), (4, 0), (1000, 0)],
    ids=["heartbeat-v99", "metadata-v127", "leader-and-isr", "api-key-1000"],
)
def test_a_version_or_api_not_served_closes_the_connection(pair: Pair, api_key: int, version: int) -> None:
    """Kafka cannot parse the header's request (RequestContext.parseRequest: InvalidRequestException)
    and closes the connection without an answer; a Heartbeat v99 from the future, a Metadata beyond
    any version, LeaderAndIsr (removed with ZooKeeper) and a key that was never assigned alike."""
    closed = {}
    for side in (pair.kafka, pair.kcoord):
        side.sock.sendall(_raw_request(api_key, version, flexible=False, body=b"\x00" * 16))
        closed[side.name] = is_closed(side.sock, timeout=10)
    assert closed == {"kafka": True, "kcoord": True}
