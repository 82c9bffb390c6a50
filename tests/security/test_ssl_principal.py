"""The SSL principal over a real mTLS connection, as the authorizer sees it (issue 25 items 2 and 4):
the client certificate's DN after `--ssl-principal-mapping-rules` (Kafka's SslPrincipalMapper), and
User:ANONYMOUS for a TLS client without a certificate (DefaultKafkaPrincipalBuilder)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.certs import Pki, make_pki
from tests.security.conftest import ALLOW, CREATE_ACLS, DESCRIBE, TOPIC, SecuredServer, Tokens, binding
from tests.server.wire import call, create_topic

TOPIC_NAME = "mtls-orders"
# CN=client,OU=eng,O=acme -> "client" (lower-cased), as a Kafka RULE would map it
RULES = "RULE:^CN=([^,]+),OU=eng,O=acme$/$1/L,DEFAULT"


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SecuredServer, Pki]]:
    root = tmp_path_factory.mktemp("ssl-principal")
    pki = make_pki(root / "pki")
    server = SecuredServer(
        root / "data", pki, Tokens(root), "--authorizer", "standard", "--super-users", "User:ANONYMOUS",
        "--ssl-principal-mapping-rules", RULES,
    )  # fmt: skip
    server.start()
    try:
        yield server, pki
    finally:
        server.kill()


def _tls(server: SecuredServer, pki: Pki, certificate: bool) -> socket.socket:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if certificate:
        context.load_cert_chain(str(pki.client))
    raw = socket.create_connection(("127.0.0.1", server.ports["SSL"]), timeout=10)
    return context.wrap_socket(raw, server_hostname="localhost")


def _describe_error(sock: socket.socket) -> int:
    topics = call(sock, 3, 9, {"topics": [{"name": TOPIC_NAME}], "allow_auto_topic_creation": False})[
        "topics"
    ]
    return int(topics[0]["error_code"])


def test_the_mapped_certificate_dn_is_the_principal_the_acls_name(mapped: tuple[SecuredServer, Pki]) -> None:
    server, pki = mapped
    with socket.create_connection(("127.0.0.1", server.ports["PLAINTEXT"]), timeout=10) as admin:
        assert create_topic(admin, TOPIC_NAME, 1)["error_code"] == 0  # User:ANONYMOUS is a super user here
    with _tls(server, pki, certificate=True) as client:
        assert _describe_error(client) == 29  # User:client has no ACL yet: TOPIC_AUTHORIZATION_FAILED
    with socket.create_connection(("127.0.0.1", server.ports["PLAINTEXT"]), timeout=10) as admin:
        acl = binding(TOPIC, TOPIC_NAME, DESCRIBE, ALLOW, principal="User:client")
        results = call(admin, CREATE_ACLS, 3, {"creations": [acl]})["results"]
        assert [r["error_code"] for r in results] == [0]
    with _tls(server, pki, certificate=True) as client:
        assert _describe_error(client) == 0  # the mapped principal, not the full DN
    with _tls(server, pki, certificate=False) as anonymous:
        assert _describe_error(anonymous) == 0  # no certificate: User:ANONYMOUS (a super user here)


def test_the_unmapped_dn_is_not_the_principal(tmp_path: Path, mapped: tuple[SecuredServer, Pki]) -> None:
    server, pki = mapped
    with socket.create_connection(("127.0.0.1", server.ports["PLAINTEXT"]), timeout=10) as admin:
        acl = binding(TOPIC, "other-topic", DESCRIBE, ALLOW, principal="User:CN=client,OU=eng,O=acme")
        assert [r["error_code"] for r in call(admin, CREATE_ACLS, 3, {"creations": [acl]})["results"]] == [0]
        assert create_topic(admin, "other-topic", 1)["error_code"] == 0
    with _tls(server, pki, certificate=True) as client:
        body = {"topics": [{"name": "other-topic"}], "allow_auto_topic_creation": False}
        assert call(client, 3, 9, body)["topics"][0]["error_code"] == 29  # the rule mapped it to User:client
