"""OAUTHBEARER's unsecured development mode end to end (issue 33 item 8): a real `kcoord serve
--sasl-oauthbearer-unsecured`, confluent-kafka (librdkafka's `enable.sasl.oauthbearer.unsecure.jwt=true`,
as its own OAUTHBEARER tests use) in a subprocess, raw SaslAuthenticate exchanges, and the ACLs the
token's `sub` is checked against. Without the flag such tokens stay refused."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.broker.security.oauth_unsecured import UNSECURED_WARNING
from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import REPO, ServerProcess
from tests.security.conftest import DESCRIBE, TOPIC, WRITE, Security, binding, create_acls
from tests.server.wire import call, connect, create_topic, is_closed

pytestmark = pytest.mark.timeout(120)

CLIENT = Path(__file__).parent / "clients" / "confluent_oauthbearer.py"
LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT")
HANDSHAKE, AUTHENTICATE, METADATA = 17, 36, 3
REQUIRED_SCOPE = "kafka"


class UnsecuredServer(ServerProcess):
    """`kcoord serve --sasl-oauthbearer-unsecured` with a required scope, a PLAINTEXT and a
    SASL_PLAINTEXT listener, and the standard authorizer (User:admin is a super user; a resource
    without ACLs is open, so the clients' topics need none)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(name="kcoord")
        self.data_dir = data_dir
        self.ports: dict[str, int] = {}

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "kcoord", "serve",
            "--data-dir", str(self.data_dir), "--fsync", "never", "--group-initial-rebalance-delay-ms", "0",
            "--listeners", ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
            "--sasl-enabled-mechanisms", "OAUTHBEARER",
            "--sasl-oauthbearer-unsecured",
            "--sasl-oauthbearer-unsecured-validator-required-scope", REQUIRED_SCOPE,
            "--authorizer", "standard", "--super-users", "User:admin",
            "--allow-everyone-if-no-acl-found", "true",
        ]  # fmt: skip

    def start(self, timeout: float = 30.0) -> int:
        super().start(timeout)
        for name in LISTENERS:
            match = self.wait_for(re.compile(rf"listening on \S+:(\d+) .*listener={name} "), timeout)
            self.ports[name] = int(match.group(1))
        return self.ports["SASL_PLAINTEXT"]

    def endpoint(self, listener: str) -> tuple[str, int]:
        return ("127.0.0.1", self.ports[listener])


@pytest.fixture(scope="module")
def unsecured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UnsecuredServer]:
    server = UnsecuredServer(tmp_path_factory.mktemp("unsecured") / "data")
    server.start()
    try:
        yield server
    finally:
        server.kill()
        print("server log tail:\n" + "\n".join(server.lines[-60:]))


def _part(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def unsigned(sub: str | None = "alice", lifetime_s: float = 3600, **claims: object) -> str:
    """An unsecured JWS as Kafka's OAuthBearerUnsecuredLoginCallbackHandler and librdkafka make it."""
    now = int(time.time())  # whole seconds, as librdkafka writes them: a later fraction would be a future iat
    body: dict[str, object] = {"iat": now, "exp": now + lifetime_s, "scope": [REQUIRED_SCOPE], **claims}
    if sub is not None:
        body["sub"] = sub
    return f"{_part({'alg': 'none'})}.{_part(body)}."


def _authenticate(sock: Any, token: str) -> dict[str, Any]:
    assert call(sock, HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})["error_code"] == 0
    return call(sock, AUTHENTICATE, 2, {"auth_bytes": f"n,,\x01auth=Bearer {token}\x01\x01".encode()})


def _client(server: UnsecuredServer, *args: str) -> dict[str, Any]:
    topic, group = f"unsec-{uuid.uuid4().hex[:8]}", f"unsec-g-{uuid.uuid4().hex[:8]}"
    bootstrap = f"127.0.0.1:{server.ports['SASL_PLAINTEXT']}"
    out = subprocess.run(
        [sys.executable, str(CLIENT), bootstrap, topic, group, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_startup_warning_is_logged(unsecured: UnsecuredServer) -> None:
    line = unsecured.wait_for(re.escape(UNSECURED_WARNING), timeout=5).string
    assert "WARNING" in line


def test_librdkafka_unsecure_jwt_produces_consumes_and_commits(unsecured: UnsecuredServer) -> None:
    result = _client(unsecured, "--unsecure-jwt", f"principal=alice scope={REQUIRED_SCOPE}")
    assert (result["unsent"], result["value"], result["committed"]) == (0, "unsecured hello", 1), result


@pytest.mark.parametrize(
    ("how", "status"),
    [
        (["--token", unsigned(lifetime_s=-60)], "invalid_token"),  # expired (no skew configured)
        (["--token", unsigned(sub=None)], "invalid_token"),  # no sub
        (["--token", unsigned(scope=["other"])], "insufficient_scope"),
        (["--unsecure-jwt", "principal=alice"], "insufficient_scope"),  # librdkafka's token, no scope
    ],
    ids=["expired", "no-sub", "wrong-scope", "librdkafka-without-scope"],
)
def test_librdkafka_is_refused_a_bad_token(unsecured: UnsecuredServer, how: list[str], status: str) -> None:
    result = _client(unsecured, *how, "--expect-refusal")
    assert result["authentication_error"] is not None, result
    assert f'"status":"{status}"' in result["authentication_error"], result


def test_the_challenge_and_the_failure_on_the_wire(unsecured: UnsecuredServer) -> None:
    """OAuthBearerSaslServer: the error JSON as the server's token, then the client's %x01 fails the
    exchange with it as the message, and the connection closes."""
    for token, challenge in (
        (unsigned(lifetime_s=-60), b'{"status":"invalid_token"}'),
        (unsigned(scope=[]), b'{"status":"insufficient_scope", "scope":"[kafka]"}'),
    ):
        with connect(unsecured.endpoint("SASL_PLAINTEXT")) as sock:
            first = _authenticate(sock, token)
            assert (first["error_code"], first["auth_bytes"]) == (0, challenge)
            final = call(sock, AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
            assert final["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert final["error_message"] == challenge.decode()
            assert is_closed(sock)
    with connect(unsecured.endpoint("SASL_PLAINTEXT")) as sock:
        ok = _authenticate(sock, unsigned(lifetime_s=60))
        assert ok["error_code"] == 0 and 50_000 < ok["session_lifetime_ms"] <= 60_000  # until exp


def _describe(listener: str, server: UnsecuredServer, sub: str | None, topic: str) -> int:
    with connect(server.endpoint(listener)) as sock:
        if sub is not None:
            assert _authenticate(sock, unsigned(sub=sub))["error_code"] == 0
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        return int(call(sock, METADATA, 9, body)["topics"][0]["error_code"])


def test_acls_see_the_principal_named_by_sub(unsecured: UnsecuredServer) -> None:
    topic = f"acl-{uuid.uuid4().hex[:8]}"
    with connect(unsecured.endpoint("SASL_PLAINTEXT")) as sock:
        assert _authenticate(sock, unsigned(sub="admin"))["error_code"] == 0  # a super user
        assert create_topic(sock, topic, 1)["error_code"] == 0
        granted = [binding(TOPIC, topic, op, principal="User:alice") for op in (DESCRIBE, WRITE)]
        assert create_acls(sock, *granted) == [0, 0]
    assert _describe("SASL_PLAINTEXT", unsecured, "alice", topic) == 0
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _describe("SASL_PLAINTEXT", unsecured, "bob", topic) == denied
    assert _describe("PLAINTEXT", unsecured, None, topic) == denied  # User:ANONYMOUS


def test_without_the_flag_unsigned_tokens_stay_refused(security: Security) -> None:
    """The session's server validates with a JWKS (KIP-768): alg none is an invalid token there."""
    with connect(("127.0.0.1", security.server.ports["SASL_PLAINTEXT"])) as sock:
        first = _authenticate(sock, unsigned())
        assert (first["error_code"], first["auth_bytes"]) == (0, b'{"status":"invalid_token"}')
        final = call(sock, AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
        assert final["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_the_flag_beside_the_jwks_validator_stops_startup(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "kcoord", "serve", "--data-dir", str(tmp_path / "data"),
        "--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-enabled-mechanisms", "OAUTHBEARER",
        "--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-jwks-endpoint-url", (tmp_path / "j").as_uri(),
    ]  # fmt: skip
    out = subprocess.run(
        argv,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "kcoord: --sasl-oauthbearer-unsecured and --sasl-oauthbearer-jwks-endpoint-url exclude each other: "
        "unsigned development tokens or the JWKS validator, not both"
    ]


# -- KafkaJS (optional: node and npm's kafkajs, installed once into a per-user cache) -------------------
KAFKAJS_VERSION = "2.2.4"
KAFKAJS_CLIENT = Path(__file__).parent / "clients" / "kafkajs_oauthbearer.js"


@pytest.fixture(scope="module")
def kafkajs() -> Path:
    """NODE_PATH holding kafkajs: ~/.cache/kcoord-tests/kafkajs-<version>, installed by npm into a
    private directory and renamed into place (safe when xdist workers race); skipped without node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kcoord-tests"
    home = cache / f"kafkajs-{KAFKAJS_VERSION}"
    if not (home / "node_modules" / "kafkajs" / "package.json").exists():
        cache.mkdir(parents=True, exist_ok=True)
        private = Path(tempfile.mkdtemp(prefix="kafkajs-", dir=cache))
        npm = ["npm", "install", "--prefix", str(private), "--no-audit", "--no-fund", "--no-save"]
        npm.append(f"kafkajs@{KAFKAJS_VERSION}")
        out = subprocess.run(npm, capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            shutil.rmtree(private, ignore_errors=True)
            pytest.skip(f"npm could not install kafkajs: {out.stderr[-500:]}")
        try:
            private.rename(home)
        except OSError:  # another worker got there first (or a broken copy is in the way)
            shutil.rmtree(private, ignore_errors=True)
    if not (home / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.skip(f"{home} holds no kafkajs: remove it to reinstall")
    return home / "node_modules"


def _kafkajs(server: UnsecuredServer, node_path: Path, sub: str, lifetime_s: int) -> dict[str, Any]:
    topic, group = f"kjs-{uuid.uuid4().hex[:8]}", f"kjs-g-{uuid.uuid4().hex[:8]}"
    bootstrap = f"127.0.0.1:{server.ports['SASL_PLAINTEXT']}"
    out = subprocess.run(
        ["node", str(KAFKAJS_CLIENT), bootstrap, topic, group, sub, str(lifetime_s), REQUIRED_SCOPE],
        env={**os.environ, "NODE_PATH": str(node_path), "KAFKAJS_NO_PARTITIONER_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_kafkajs_with_an_unsigned_token_produces_consumes_and_commits(
    unsecured: UnsecuredServer, kafkajs: Path
) -> None:
    assert _kafkajs(unsecured, kafkajs, "alice", 3600) == {"value": "kafkajs unsecured hello", "committed": 1}


def test_kafkajs_with_an_expired_unsigned_token_is_refused(unsecured: UnsecuredServer, kafkajs: Path) -> None:
    """KafkaJS takes the error challenge for success and sends Metadata: the gate closes (as for
    aiokafka, docs/compat.md); the client reports the closed connection."""
    before = unsecured.count("authentication failed")
    result = _kafkajs(unsecured, kafkajs, "alice", -60)
    assert "error" in result and "value" not in result, result
    assert unsecured.count("authentication failed") > before
