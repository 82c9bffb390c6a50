"""Operating the secured server: /metrics counts authentications, the HTTP endpoint's TLS and bearer
token, certificates reloaded on SIGHUP, and the old single-listener flags unchanged."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kcoord.coordinator.metadata.scram_formatter import salted_password
from tests.kcoord_process import CommandProcess, KcoordServer, api_versions_round_trip
from tests.security.certs import make_pki
from tests.security.conftest import PASSWORD, USER, Security
from tests.server.wire import call, connect

pytestmark = pytest.mark.timeout(60)


def _http_port(server: CommandProcess | Security) -> int:
    proc = server.server if isinstance(server, Security) else server
    return int(proc.wait_for(r"http endpoint on \S+:(\d+)").group(1))


def _authentications(metrics: str) -> dict[tuple[str, str], float]:
    pattern = re.compile(
        r'^kcoord_authentications_total\{mechanism="([^"]+)",result="([^"]+)"\} (\S+)$', re.M
    )
    return {(m, r): float(v) for m, r, v in pattern.findall(metrics)}


def test_metrics_count_authentications_by_mechanism_and_result(security: Security) -> None:
    url = f"http://127.0.0.1:{_http_port(security)}/metrics"
    before = _authentications(urllib.request.urlopen(url, timeout=10).read().decode())
    for password in (PASSWORD, "wrong"):
        with connect(("127.0.0.1", security.server.ports["SASL_PLAINTEXT"])) as sock:
            call(sock, 17, 1, {"mechanism": "PLAIN"})
            call(sock, 36, 1, {"auth_bytes": f"\0{USER}\0{password}".encode()})
    after = _authentications(urllib.request.urlopen(url, timeout=10).read().decode())
    assert after[("PLAIN", "success")] == before.get(("PLAIN", "success"), 0) + 1
    assert after[("PLAIN", "failure")] == before.get(("PLAIN", "failure"), 0) + 1


def _tls_subject(port: int, cafile: Path, client: tuple[Path, Path] | None = None) -> str:
    context = ssl.create_default_context(cafile=str(cafile))
    if client is not None:
        context.load_cert_chain(*client)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        api_versions_round_trip(tls, 1)
        return str(tls.getpeercert()["issuer"])


def test_client_auth_required_sighup_reload_and_http_tls_with_a_bearer_token(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    keystore = tmp_path / "server.pem"
    shutil.copy(pki.server, keystore)
    server = CommandProcess(
        [
            sys.executable,
            "-m",
            "kcoord",
            "serve",
            "--data-dir",
            str(tmp_path / "data"),
            "--fsync",
            "never",
            "--listeners",
            "SSL://127.0.0.1:0",
            "--ssl-keystore-location",
            str(keystore),
            "--http-listen",
            "127.0.0.1:0",
            "--http-ssl-keystore-location",
            str(keystore),
            "--http-bearer-token",
            "s3cret",
            "--ssl-truststore-location",
            str(pki.ca),
            "--ssl-client-auth",
            "required",
        ],
        name="kcoord",
    )
    server.start()
    try:
        port, client = server.port, (pki.client_cert, pki.client_key)
        assert "kcoord test CA" in _tls_subject(port, pki.ca, client)
        with pytest.raises((ssl.SSLError, ConnectionError)):  # required: no certificate, no connection
            _tls_subject(port, pki.ca)
        http = f"https://127.0.0.1:{_http_port(server)}"
        context = ssl.create_default_context(cafile=str(pki.ca))
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{http}/metrics", context=context, timeout=10)
        assert refused.value.code == 401
        assert urllib.request.urlopen(f"{http}/healthz", context=context, timeout=10).status == 200
        authorized = urllib.request.Request(f"{http}/metrics", headers={"Authorization": "Bearer s3cret"})
        assert (
            b"kcoord_authentications"
            in urllib.request.urlopen(authorized, context=context, timeout=10).read()
        )
        shutil.copy(pki.other_server, keystore)
        server.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
        server.wait_for("TLS certificates reloaded")
        assert "other CA" in _tls_subject(port, pki.other_ca, client)  # new connections get the new chain
    finally:
        server.kill()


def test_the_old_listen_flags_still_make_one_plaintext_listener(tmp_path: Path) -> None:
    server = CommandProcess(
        [
            sys.executable,
            "-m",
            "kcoord",
            "serve",
            "--data-dir",
            str(tmp_path / "data"),
            "--fsync",
            "never",
            "--listen",
            "127.0.0.1:0",
            "--advertised-listener",
            "example.test:1234",
        ],
        name="kcoord",
    )
    server.start()
    try:
        line = server.wait_for(r"listening on .*").group(0)
        assert "advertised=example.test:1234" in line and "listener=PLAINTEXT protocol=PLAINTEXT" in line
        with connect(("127.0.0.1", server.port)) as sock:
            brokers = call(sock, 3, 9, {"topics": []})["brokers"]
        assert [(b["host"], b["port"]) for b in brokers] == [("example.test", 1234)]
    finally:
        server.kill()


def test_scram_credentials_survive_a_restart(tmp_path: Path) -> None:
    """Record type 9 is replayed: the credential written before the restart still authenticates."""
    server = KcoordServer(tmp_path / "data", "--fsync", "never")
    server.start()
    try:
        salted = salted_password("SCRAM-SHA-512", "pw", b"0123456789", 8192)
        upsert = {
            "name": "erin",
            "mechanism": 2,
            "iterations": 8192,
            "salt": b"0123456789",
            "salted_password": salted,
        }
        with connect(server.address) as sock:
            assert (
                call(sock, 51, 0, {"upsertions": [upsert], "deletions": []})["results"][0]["error_code"] == 0
            )
        server.restart()
        with connect(server.address) as sock:
            [result] = call(sock, 50, 0, {"users": None})["results"]
        assert (result["user"], result["credential_infos"]) == (
            "erin",
            [{"mechanism": 2, "iterations": 8192}],
        )
    finally:
        server.kill()


def test_librdkafka_reauthenticates_before_its_session_expires(tmp_path: Path) -> None:
    """KIP-368 with a stock client: sessions of 1 s; librdkafka re-authenticates on the same connections
    (same mechanism and principal), keeps producing, and no session is closed for expiry."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    server = CommandProcess(
        [
            sys.executable,
            "-m",
            "kcoord",
            "serve",
            "--data-dir",
            str(tmp_path / "data"),
            "--fsync",
            "never",
            "--listeners",
            "SASL_PLAINTEXT://127.0.0.1:0",
            "--connections-max-reauth-ms",
            "1000",
            "--http-listen",
            "127.0.0.1:0",
        ],
        name="kcoord",
    )
    server.env["KCOORD_SASL_SCRAM_BOOTSTRAP_USERS"] = f"{USER}={PASSWORD}"
    server.start()
    try:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{server.port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": USER,
                "sasl.password": PASSWORD,
            }
        )
        metrics = f"http://127.0.0.1:{_http_port(server)}/metrics"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # bounded: until the sessions were renewed a few times
            producer.produce("reauth", b"x")
            assert producer.flush(5) == 0
            counts = _authentications(urllib.request.urlopen(metrics, timeout=10).read().decode())
            if counts.get(("SCRAM-SHA-256", "success"), 0) >= 6:
                break
            time.sleep(0.2)
        assert counts.get(("SCRAM-SHA-256", "success"), 0) >= 6, counts
        assert ("SCRAM-SHA-256", "failure") not in counts
        assert server.count("SASL session expired") == 0
        assert server.count("peer=") == 0  # no connection was closed as a failure
    finally:
        server.kill()
