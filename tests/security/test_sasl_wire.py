"""SASL on the wire against the session's secured kcoord, with raw sockets (SaslServerAuthenticator's
behaviour, issue 25): the pre-authentication gate, failures, frame cap, re-authentication, and the
per-listener endpoints."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import pytest
from scramp import ScramClient

from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import encode_request
from tests.security.conftest import PASSWORD, USER, Security
from tests.server.wire import call, connect, decode_response, read_frame, send

pytestmark = pytest.mark.timeout(60)

HANDSHAKE, AUTHENTICATE, METADATA, HEARTBEAT, API_VERSIONS = 17, 36, 3, 12, 18
DESCRIBE_SCRAM, ALTER_SCRAM, FIND_COORDINATOR, DESCRIBE_CLUSTER = 50, 51, 10, 60


def _sasl_socket(security: Security) -> socket.socket:
    return connect(("127.0.0.1", security.server.ports["SASL_PLAINTEXT"]))


def _unanswered_close(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the server sent before closing (fails if it stays open)."""
    received = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return bytes(received)
        if not data:
            return bytes(received)
        received += data
    raise AssertionError(f"still open after {timeout}s; received {bytes(received)!r}")


def _handshake(sock: socket.socket, mechanism: str, version: int = 1) -> dict[str, Any]:
    return call(sock, HANDSHAKE, version, {"mechanism": mechanism})


def _authenticate(sock: socket.socket, token: bytes, version: int = 1) -> dict[str, Any]:
    return call(sock, AUTHENTICATE, version, {"auth_bytes": token})


def _plain(sock: socket.socket, user: str = USER, password: str = PASSWORD) -> dict[str, Any]:
    assert _handshake(sock, "PLAIN")["error_code"] == 0
    return _authenticate(sock, f"\0{user}\0{password}".encode())


def _scram(sock: socket.socket, mechanism: str, user: str, password: str) -> dict[str, Any]:
    assert _handshake(sock, mechanism)["error_code"] == 0
    client = ScramClient([mechanism], user, password)
    first = _authenticate(sock, client.get_client_first().encode())
    assert first["error_code"] == 0, first
    client.set_server_first(first["auth_bytes"].decode())
    return _authenticate(sock, client.get_client_final().encode())


def _oauth(sock: socket.socket, token: str) -> dict[str, Any]:
    assert _handshake(sock, "OAUTHBEARER")["error_code"] == 0
    return _authenticate(sock, f"n,,\x01auth=Bearer {token}\x01\x01".encode())


def _metadata_port(sock: socket.socket) -> int:
    return int(call(sock, METADATA, 9, {"topics": []})["brokers"][0]["port"])


def test_every_api_before_authentication_closes_without_an_answer(security: Security) -> None:
    """Kafka's handleKafkaRequest: anything but ApiVersions and SaslHandshake is an
    IllegalSaslStateException, no response. All APIs at once, each on its own connection."""
    socks = {}
    for api_key, (low, _) in SERVED_VERSIONS.items():
        if api_key in (API_VERSIONS, HANDSHAKE):
            continue
        sock = _sasl_socket(security)
        try:
            send(sock, api_key, low, 7, {})
        except Exception:  # a request our codec cannot build empty: a bare header is as good
            sock.sendall(struct.pack(">ihhih", 10, api_key, low, 7, -1))
        socks[api_key] = sock
    for api_key, sock in socks.items():
        with sock:
            assert _unanswered_close(sock) == b"", api_key


def test_api_versions_then_handshake_then_requests_are_served(security: Security) -> None:
    with _sasl_socket(security) as sock:
        versions = call(sock, API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert versions["error_code"] == 0
        assert _plain(sock)["error_code"] == 0
        assert _metadata_port(sock) == security.server.ports["SASL_PLAINTEXT"]
        # Once authenticated, SaslHandshake and SaslAuthenticate are KafkaApis' ILLEGAL_SASL_STATE.
        assert _handshake(sock, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert _authenticate(sock, b"x")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_api_versions_twice_before_authentication_closes(security: Security) -> None:
    with _sasl_socket(
        security
    ) as sock:  # an unsupported version may be retried (KIP-511), once served no more
        sock.sendall(struct.pack(">ihhih", 10, API_VERSIONS, 99, 1, -1))
        assert (
            decode_response(API_VERSIONS, 0, read_frame(sock))[1]["error_code"]
            == ErrorCode.UNSUPPORTED_VERSION
        )
        call(sock, API_VERSIONS, 0, {})
        send(sock, API_VERSIONS, 0, 2, {})
        assert _unanswered_close(sock) == b""


def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(security: Security) -> None:
    with _sasl_socket(security) as sock:
        started = time.monotonic()
        answer = _handshake(sock, "GSSAPI")
        assert time.monotonic() - started >= 0.09  # connection.failed.authentication.delay.ms
        assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
        assert _unanswered_close(sock) == b""


def test_another_request_during_the_exchange_is_illegal_sasl_state(security: Security) -> None:
    with _sasl_socket(security) as sock:
        assert _handshake(sock, "PLAIN")["error_code"] == 0
        answer = call(sock, HEARTBEAT, 3, {"group_id": "g", "generation_id": 1, "member_id": "m"})
        assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert _unanswered_close(sock) == b""


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_failed_scram_proof_never_admits_the_connection(security: Security, mechanism: str) -> None:
    with _sasl_socket(security) as sock:
        assert _handshake(sock, mechanism)["error_code"] == 0
        client = ScramClient([mechanism], USER, "not the password")
        first = _authenticate(sock, client.get_client_first().encode())
        client.set_server_first(first["auth_bytes"].decode())
        # The bad proof and a Metadata request in one write: only the failure is ever answered.
        final = encode_request(AUTHENTICATE, 1, 5, {"auth_bytes": client.get_client_final().encode()})
        sock.sendall(final + encode_request(METADATA, 9, 6, {"topics": []}))
        correlation, answer = decode_response(AUTHENTICATE, 1, read_frame(sock))
        assert (correlation, answer["error_code"]) == (5, ErrorCode.SASL_AUTHENTICATION_FAILED)
        generic = "Authentication failed during authentication due to invalid credentials with SASL mechanism"
        assert answer["error_message"] == f"{generic} {mechanism}"
        assert _unanswered_close(sock) == b""


def test_scram_succeeds_with_the_right_password(security: Security) -> None:
    with _sasl_socket(security) as sock:
        answer = _scram(sock, "SCRAM-SHA-512", USER, PASSWORD)
        assert answer["error_code"] == 0 and answer["auth_bytes"].startswith(b"v=")
        assert _metadata_port(sock) == security.server.ports["SASL_PLAINTEXT"]


def test_an_oversized_frame_before_authentication_is_refused_unread(security: Security) -> None:
    """sasl.server.max.receive.size: the size prefix alone closes the connection; the server never
    waits for (or buffers) the 2 GiB announced."""
    with _sasl_socket(security) as sock:
        sock.sendall(struct.pack(">i", 0x7FFFFFFF) + b"\0" * 64)
        assert _unanswered_close(sock) == b""
    with _sasl_socket(security) as sock:
        sock.sendall(struct.pack(">i", 524_289))
        assert _unanswered_close(sock) == b""


def test_v0_handshake_takes_raw_tokens(security: Security) -> None:
    with _sasl_socket(security) as sock:
        assert _handshake(sock, "PLAIN", version=0)["error_code"] == 0
        token = f"\0{USER}\0{PASSWORD}".encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert read_frame(sock) == b""  # PLAIN's empty server token, size-prefixed
        assert _metadata_port(sock) == security.server.ports["SASL_PLAINTEXT"]


def test_a_wrong_raw_token_closes_without_an_answer(security: Security) -> None:
    with _sasl_socket(security) as sock:
        assert _handshake(sock, "PLAIN", version=0)["error_code"] == 0
        token = f"\0{USER}\0wrong".encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _unanswered_close(sock) == b""


def test_reauthentication_keeps_the_principal_or_closes(security: Security) -> None:
    """KIP-368: an OAUTHBEARER session lasts until the token's exp; a SaslHandshake re-authenticates
    with the same mechanism and principal, a different principal fails and closes."""
    with _sasl_socket(security) as sock:
        first = _oauth(sock, security.tokens.token(lifetime_s=60))
        assert first["error_code"] == 0 and 50_000 < first["session_lifetime_ms"] <= 60_000
        again = _oauth(sock, security.tokens.token(lifetime_s=120))
        assert again["error_code"] == 0 and again["session_lifetime_ms"] > 60_000
        assert _metadata_port(sock) == security.server.ports["SASL_PLAINTEXT"]
    with _sasl_socket(security) as sock:
        assert _oauth(sock, security.tokens.token(lifetime_s=60))["error_code"] == 0
        answer = _oauth(sock, security.tokens.token(sub="mallory", lifetime_s=60))
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == (
            f"Cannot change principals during re-authentication from User.{USER}: User.mallory"
        )
        assert _unanswered_close(sock) == b""


def test_an_expired_session_is_closed(security: Security) -> None:
    with _sasl_socket(security) as sock:
        assert _oauth(sock, security.tokens.token(lifetime_s=1.2))["error_code"] == 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # answered until the token's exp, then closed
            send(sock, METADATA, 9, 1, {"topics": []})
            try:
                read_frame(sock)
            except (ConnectionError, OSError):
                return
            time.sleep(0.1)
        raise AssertionError("the expired session stayed open")


def test_endpoints_follow_the_listener_and_plaintext_refuses_sasl(security: Security) -> None:
    ports = security.server.ports
    with connect(("127.0.0.1", ports["PLAINTEXT"])) as sock:
        assert _metadata_port(sock) == ports["PLAINTEXT"]
        assert call(sock, FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})["port"] == ports["PLAINTEXT"]
        assert call(sock, DESCRIBE_CLUSTER, 0, {})["brokers"][0]["port"] == ports["PLAINTEXT"]
        assert _handshake(sock, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    with _sasl_socket(security) as sock:
        assert _plain(sock)["error_code"] == 0
        port = ports["SASL_PLAINTEXT"]
        assert call(sock, FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})["port"] == port
        assert call(sock, DESCRIBE_CLUSTER, 0, {})["brokers"][0]["port"] == port


def test_scram_credentials_are_altered_described_and_used(security: Security) -> None:
    import hashlib
    import os

    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", b"bob-secret", salt, 4096)
    with connect(("127.0.0.1", security.server.ports["PLAINTEXT"])) as sock:
        upsert = {"name": "bob", "mechanism": 1, "iterations": 4096, "salt": salt, "salted_password": salted}
        bad = {**upsert, "name": "carol", "iterations": 4095}
        results = call(
            sock,
            ALTER_SCRAM,
            0,
            {"upsertions": [upsert, bad], "deletions": [{"name": "dave", "mechanism": 1}]},
        )
        by_user = {r["user"]: (r["error_code"], r["error_message"]) for r in results["results"]}
        assert by_user == {
            "bob": (0, None),
            "carol": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
            "dave": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        }
        twice = call(
            sock, ALTER_SCRAM, 0, {"upsertions": [upsert, {**upsert, "mechanism": 2}], "deletions": []}
        )
        assert [(r["user"], r["error_code"]) for r in twice["results"]] == [
            ("bob", ErrorCode.DUPLICATE_RESOURCE)
        ]
        described = call(sock, DESCRIBE_SCRAM, 0, {"users": [{"name": "bob"}, {"name": "nobody"}]})["results"]
        assert described[0] == {
            "user": "bob", "error_code": 0, "error_message": None,
            "credential_infos": [{"mechanism": 1, "iterations": 4096}],
        }  # fmt: skip
        assert described[1]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
    with _sasl_socket(security) as sock:
        assert _scram(sock, "SCRAM-SHA-256", "bob", "bob-secret")["error_code"] == 0
