"""The node-to-node client (kcoord/cluster/node_client.py) against a real kcoord: a SCRAM login (and a
wrong password refused as NodeAuthFailed, the callers' retriable path), and mTLS with the node's own
keystore on a listener that requires a client certificate. Its settings come from `kcoord serve` flags."""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.cluster.node_client import NodeAuthFailed, NodeClient, node_client
from kcoord.wiring.config import parse_serve_argv
from tests.kcoord_process import CommandProcess
from tests.security.certs import Pki, make_pki

METADATA = 3


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


def _server(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[CommandProcess]:
    argv = [sys.executable, "-m", "kcoord", "serve", "--data-dir", str(tmp_path / "data"), "--fsync", "never",
            *flags]  # fmt: skip
    server = CommandProcess(argv, name="kcoord")
    server.env.update(env or {})
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def scram_server(tmp_path: Path) -> Iterator[CommandProcess]:
    yield from _server(
        tmp_path, "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
        env={"KCOORD_SASL_SCRAM_BOOTSTRAP_USERS": "node=node-secret"},
    )  # fmt: skip


@pytest.fixture
def mtls_server(tmp_path: Path, pki: Pki) -> Iterator[CommandProcess]:
    yield from _server(
        tmp_path, "--listeners", "SSL://127.0.0.1:0", "--ssl-keystore-location", str(pki.server),
        "--ssl-truststore-location", str(pki.ca), "--ssl-client-auth", "required",
    )  # fmt: skip


def _client(*flags: str) -> NodeClient:
    return node_client(parse_serve_argv(["--cluster", "postgresql://x@127.0.0.1/x", *flags], env={}))


async def _metadata(client: NodeClient, server: CommandProcess) -> list[int]:
    answer = await client.call(server.host, server.port, METADATA, 9, {"topics": []})
    return [int(b["node_id"]) for b in answer["brokers"]]


async def test_a_node_logs_in_with_scram_and_a_wrong_password_is_refused(
    scram_server: CommandProcess,
) -> None:
    flags = ("--listeners", "SASL_PLAINTEXT://127.0.0.1:1", "--sasl-mechanism-inter-broker-protocol",
             "SCRAM-SHA-512", "--inter-broker-sasl-username", "node")  # fmt: skip
    client = _client(*flags, "--inter-broker-sasl-password", "node-secret")
    assert client.listener == "SASL_PLAINTEXT"
    assert await _metadata(client, scram_server) == [0]
    assert await _metadata(client, scram_server) == [0]  # the salted password cached: a second login
    wrong = _client(*flags, "--inter-broker-sasl-password", "not-it")
    with pytest.raises(NodeAuthFailed, match="refused this node's SCRAM-SHA-512 login"):
        await _metadata(wrong, scram_server)


async def test_a_node_presents_its_keystore_on_an_ssl_listener_that_requires_a_certificate(
    mtls_server: CommandProcess, pki: Pki
) -> None:
    listener = ("--listeners", "SSL://127.0.0.1:1", "--ssl-keystore-location", str(pki.server))
    client = _client(*listener, "--ssl-truststore-location", str(pki.ca))
    assert client.listener == "SSL"
    assert await _metadata(client, mtls_server) == [0]
    without_certificate = NodeClient("SSL", ssl.create_default_context(cafile=str(pki.ca)))
    with pytest.raises((OSError, EOFError)):  # the listener requires one: the handshake fails
        await _metadata(without_certificate, mtls_server)
    with pytest.raises(ssl.SSLCertVerificationError):  # no truststore: the system's CAs do not know ours
        await _metadata(_client(*listener), mtls_server)
