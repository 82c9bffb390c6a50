"""One secured kcoord per test session, shared by every client library's tests (issue 25).

Listeners: PLAINTEXT, SSL (client certificates requested: server-authenticated and mTLS clients on
one listener), SASL_PLAINTEXT and SASL_SSL; mechanisms PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.
Users: `alice` (PLAIN and SCRAM, bootstrapped), tokens signed by a fresh EC key whose JWKS is a file.
Certificates and keys are made per session in a temporary directory (tests/security/certs.py).

The authorization tests use `acl_server` instead: a real `kcoord serve --authorizer standard` whose
principal on PLAINTEXT is User:ANONYMOUS, and ACL helpers that speak CreateAcls on the wire.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from tests.kcoord_process import KcoordServer, ServerProcess
from tests.ports import free_port
from tests.security.certs import Pki, make_pki
from tests.server.wire import call

USER, PASSWORD = "alice", "alice-secret"
AUDIENCE, ISSUER = "kcoord", "https://issuer.test"
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Tokens:
    """JWTs signed by the session's key (kid `k1`), or by a stranger's."""

    def __init__(self, out: Path) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.stranger = ec.generate_private_key(ec.SECP256R1())
        jwk = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = out / "jwks.json"
        self.jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "ES256"}]}))

    def token(
        self, sub: str = USER, lifetime_s: float = 3600, *, stranger: bool = False, **claims: object
    ) -> str:
        now = int(time.time())
        body = {"sub": sub, "iat": now, "exp": now + lifetime_s, "aud": AUDIENCE, "iss": ISSUER, **claims}
        key = self.stranger if stranger else self.key
        return jwt.encode(body, key, algorithm="ES256", headers={"kid": "k1"})


class SecuredServer(ServerProcess):
    def __init__(self, data_dir: Path, pki: Pki, tokens: Tokens, *extra: str) -> None:
        super().__init__(
            env={
                "KCOORD_SASL_PLAIN_USERS": f"{USER}={PASSWORD}",
                "KCOORD_SASL_SCRAM_BOOTSTRAP_USERS": f"{USER}={PASSWORD}",
            },
            name="kcoord",
        )
        self.data_dir, self.pki, self.tokens, self.extra = data_dir, pki, tokens, list(extra)
        self.ports: dict[str, int] = {}

    def argv(self) -> list[str]:
        listeners = ",".join(f"{name}://127.0.0.1:{self.ports.get(name, 0)}" for name in LISTENERS)
        return [
            sys.executable, "-m", "kcoord", "serve",
            "--data-dir", str(self.data_dir), "--fsync", "never", "--group-initial-rebalance-delay-ms", "0",
            "--listeners", listeners,
            "--ssl-keystore-location", str(self.pki.server),
            "--ssl-truststore-location", str(self.pki.ca),
            "--ssl-client-auth", "requested",
            "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            "--sasl-oauthbearer-jwks-endpoint-url", self.tokens.jwks.as_uri(),
            "--sasl-oauthbearer-expected-audience", AUDIENCE,
            "--sasl-oauthbearer-expected-issuer", ISSUER,
            "--http-listen", "127.0.0.1:0",
            *self.extra,
        ]  # fmt: skip

    def start(self, timeout: float = 30.0) -> int:
        for name in LISTENERS:  # reserved ports (tests/ports.py): a restart finds them free
            self.ports.setdefault(name, free_port())
        super().start(timeout)
        for name in LISTENERS:
            match = self.wait_for(re.compile(rf"listening on \S+:(\d+) .*listener={name} "), timeout)
            self.ports[name] = int(match.group(1))
        return self.ports["PLAINTEXT"]

    def bootstrap_for(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@dataclass(frozen=True)
class Security:
    server: SecuredServer
    pki: Pki
    tokens: Tokens


@pytest.fixture(scope="session")
def security(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Security]:
    root = tmp_path_factory.mktemp("security")
    pki = make_pki(root / "pki")
    tokens = Tokens(root)
    server = SecuredServer(root / "data", pki, tokens)
    server.start()
    try:
        yield Security(server, pki, tokens)
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-80:]))


# -- authorization (acl_server) -------------------------------------------------------------------
ANONYMOUS = "User:ANONYMOUS"
# Kafka codes (AclOperation, AclPermissionType, ResourceType, PatternType)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, ALL = 3, 4, 5, 6, 7, 8, 2
CLUSTER_ACTION, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 12
DENY, ALLOW = 2, 3
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
CREATE_ACLS, DESCRIBE_ACLS, DELETE_ACLS = 30, 29, 31


def binding(
    resource_type: int, name: str, operation: int, permission: int = ALLOW, principal: str = ANONYMOUS,
    pattern: int = LITERAL, host: str = "*",
) -> dict[str, Any]:  # fmt: skip
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def create_acls(sock: socket.socket, *bindings: dict[str, Any], version: int = 3) -> list[int]:
    results = call(sock, CREATE_ACLS, version, {"creations": list(bindings)})["results"]
    return [int(r["error_code"]) for r in results]


@pytest.fixture
def acl_server(tmp_path: Path) -> Iterator[KcoordServer]:
    """`--authorizer standard --allow-everyone-if-no-acl-found true`: a resource no ACL applies to is
    open, so the tests bootstrap their ACLs over the wire as ANONYMOUS; a resource with an ACL for
    someone else (User:bob) is closed to ANONYMOUS."""
    proc = KcoordServer(
        tmp_path / "data", "--fsync", "never", "--authorizer", "standard",
        "--allow-everyone-if-no-acl-found", "true", "--http-listen", "127.0.0.1:0",
    )  # fmt: skip
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))
