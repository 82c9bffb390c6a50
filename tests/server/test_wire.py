"""Framing, ApiVersions negotiation and bad input against a real `kcoord serve` over raw sockets."""

from __future__ import annotations

import os
import socket
import struct
import threading

import pytest

from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.protocol.frames import encode_request
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, decode_response, is_closed, read_frame, send

API_VERSIONS = 18
METADATA = 3
FIND_COORDINATOR = 10
UNSUPPORTED_VERSION = 35


def _api_versions_body(version: int) -> dict[str, object]:
    return {"client_software_name": "kcoord-test", "client_software_version": "1.0"} if version >= 3 else {}


def _assert_served(server: KcoordServer) -> None:
    """The server still answers a fresh connection (bad input elsewhere did not hurt it)."""
    with connect(server.address) as sock:
        response = call(sock, API_VERSIONS, 0, {})
        assert response["error_code"] == 0


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_lists_served_apis_at_every_version(server: KcoordServer, version: int) -> None:
    with connect(server.address) as sock:
        response = call(sock, API_VERSIONS, version, _api_versions_body(version), correlation_id=7 + version)
    assert response["error_code"] == 0
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert advertised[API_VERSIONS] == SERVED_VERSIONS[API_VERSIONS]
    # What every consumer needs. Produce (0) too: librdkafka derives its Fetch version from the
    # Produce+Fetch ranges and sends a broken "Fetch v0" when Produce is missing.
    for key in (0, 1, 2, METADATA, FIND_COORDINATOR, 11, 12, 13, 14, 8, 9):
        assert advertised[key] == SERVED_VERSIONS[key]
    assert set(advertised) <= set(SERVED_VERSIONS)


def test_api_versions_at_unsupported_version_answers_v0_layout_with_key_18_range(
    server: KcoordServer,
) -> None:
    low, high = SERVED_VERSIONS[API_VERSIONS]
    with connect(server.address) as sock:
        # A version from the future with a body we could not parse: the server must not try to.
        payload = struct.pack(">hhih", API_VERSIONS, high + 1, 4242, 3) + b"cli" + os.urandom(17)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        correlation_id, body = decode_response(API_VERSIONS, 0, read_frame(sock))
        assert correlation_id == 4242
        assert body["error_code"] == UNSUPPORTED_VERSION
        assert [(k["api_key"], k["min_version"], k["max_version"]) for k in body["api_keys"]] == [
            (API_VERSIONS, low, high)
        ]
        # Like kafka-python, retry at the advertised max on the same connection.
        response = call(sock, API_VERSIONS, high, _api_versions_body(high), correlation_id=4243)
        assert response["error_code"] == 0


def test_api_versions_v3_with_invalid_software_name_is_invalid_request(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        body = {"client_software_name": "-bad name-", "client_software_version": "1.0"}
        response = call(sock, API_VERSIONS, 3, body)
    assert response["error_code"] == 42


def test_unknown_api_key_closes_the_connection(server: KcoordServer) -> None:
    with connect(server.address) as sock:
        payload = struct.pack(">hhih", 999, 0, 1, -1)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        assert is_closed(sock)
    _assert_served(server)


def test_unsupported_version_of_a_served_api_closes_the_connection(server: KcoordServer) -> None:
    _, high = SERVED_VERSIONS[METADATA]
    with connect(server.address) as sock:
        payload = struct.pack(">hhih", METADATA, high + 1, 1, -1)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        assert is_closed(sock)
    _assert_served(server)


def test_unserved_produce_version_closes_the_connection(server: KcoordServer) -> None:
    """Produce v0-2 (magic 0/1 message sets) is not served: Kafka closes the connection."""
    with connect(server.address) as sock:
        send(sock, 0, 2, 1, {"acks": 1, "timeout_ms": 1000, "topic_data": []})
        assert is_closed(sock)


@pytest.mark.parametrize(
    "garbage",
    [
        # a complete frame of random bytes: random api key/version/body, never a valid request
        pytest.param(struct.pack(">i", 4092) + os.urandom(4092), id="random-bytes"),
        pytest.param(struct.pack(">i", 0x7FFFFFFF) + b"x" * 100, id="2GiB-size-prefix"),
        pytest.param(struct.pack(">i", -5) + b"x" * 10, id="negative-size"),
        pytest.param(struct.pack(">i", 10) + struct.pack(">hhih", METADATA, 1, 1, -1), id="truncated-body"),
        pytest.param(struct.pack(">i", 2) + b"\x00\x12", id="shorter-than-header"),
    ],
)
def test_bad_input_closes_only_that_connection(server: KcoordServer, garbage: bytes) -> None:
    with connect(server.address) as healthy, connect(server.address) as bad:
        assert call(healthy, API_VERSIONS, 0, {})["error_code"] == 0
        bad.sendall(garbage)
        assert is_closed(bad)
        assert call(healthy, API_VERSIONS, 1, {}, correlation_id=2)["error_code"] == 0
    _assert_served(server)


def test_frame_cut_midway_then_disconnect_leaves_server_serving(server: KcoordServer) -> None:
    with connect(server.address) as healthy:
        cut = connect(server.address)
        cut.sendall(struct.pack(">i", 100) + b"\x00\x03\x00\x01")  # 4 of 100 promised bytes
        cut.shutdown(socket.SHUT_WR)
        assert is_closed(cut)
        cut.close()
        assert call(healthy, API_VERSIONS, 2, {})["error_code"] == 0
    assert server.proc is not None and server.proc.poll() is None


def test_one_log_line_per_bad_connection(server: KcoordServer) -> None:
    before = server.count("closing connection")
    mark = len(server.lines)
    with connect(server.address) as bad:
        bad.sendall(struct.pack(">i", 0x7FFFFFFF))
        assert is_closed(bad)
    server.wait_for("closing connection", start=mark)
    _assert_served(server)  # any further line for the same connection would have been logged by now
    assert server.count("closing connection") == before + 1


def test_pipelined_requests_are_answered_in_request_order(server: KcoordServer) -> None:
    requests = [
        (API_VERSIONS, 0, {}),
        (METADATA, 1, {"topics": []}),
        (FIND_COORDINATOR, 1, {"key": "g", "key_type": 0}),
        (API_VERSIONS, 2, {}),
        (METADATA, 4, {"topics": None, "allow_auto_topic_creation": False}),
    ]
    with connect(server.address) as sock:
        for correlation_id, (api_key, version, body) in enumerate(requests, start=100):
            send(sock, api_key, version, correlation_id, body)
        for correlation_id, (api_key, version, _) in enumerate(requests, start=100):
            got, _ = decode_response(api_key, version, read_frame(sock))
            assert got == correlation_id


def test_thousands_of_pipelined_requests_keep_their_order(server: KcoordServer) -> None:
    count = 3000  # > the server's read-ahead bound: reading pauses and resumes on the way
    frames = b"".join(encode_request(METADATA, 1, i, {"topics": []}, client_id="p") for i in range(count))
    with connect(server.address) as sock:
        sender = threading.Thread(target=sock.sendall, args=(frames,), daemon=True)
        sender.start()
        for expected in range(count):
            correlation_id, _ = decode_response(METADATA, 1, read_frame(sock))
            assert correlation_id == expected
        sender.join(10)
