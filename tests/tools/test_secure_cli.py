"""The client commands over a real SASL_SSL listener with `--command-config` (the real CLI, in its own
process, against a real `kcoord serve`): what `kcoord groups` reports is what a stock client
(confluent-kafka over the same listener) committed; `kcoord users` makes SCRAM credentials a stock
client logs in with; OAUTHBEARER from a token file; a wrong password, an expired token, an untrusted
server and a plaintext attempt are one-line failures. Certificates come from `kcoord dev certs`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import unique
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


class SecureServer(KcoordServer):
    """kcoord with a PLAINTEXT listener (the readiness probe's) and a secured one (the tests')."""

    listeners = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "kcoord", "serve",
            "--listeners", self.listeners,
            "--data-dir", str(self.data_dir),
            "--group-initial-rebalance-delay-ms", "0",
            *self.extra,
        ]  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    done = run("dev", "certs", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """An OAuth issuer's signing key and its JWKS file (kid "k1")."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "ES256", "use": "sig"}]}))
    return key, path


@pytest.fixture(scope="module")
def secure(certs: Path, issuer: tuple[Any, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The SASL_SSL bootstrap address (localhost:PORT) of a server with PLAIN users, SCRAM and
    OAUTHBEARER (tokens signed by `issuer`)."""
    tmp = tmp_path_factory.mktemp("secure")
    env = {"KCOORD_SASL_PLAIN_USERS": ",".join(f"{u}={p}" for u, p in USERS.items())}
    extra = (
        "--ssl-keystore-location", str(certs / "server.pem"),
        "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "--sasl-oauthbearer-jwks-endpoint-url", issuer[1].as_uri(),
    )  # fmt: skip
    server = SecureServer(tmp / "data", *extra, log_path=tmp / "server.log", env=env)
    try:
        server.start()
        port = server.wait_for(r"listening on \S+:(\d+) .*listener=SASL_SSL").group(1)
        yield f"localhost:{port}"
    finally:
        server.kill()


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def properties(path: Path, certs: Path, user: str, password: str) -> str:
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={certs / 'ca.pem'}\n"
        "sasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="{user}" password="{password}";\n'
    )
    return str(path)


def stock_config(bootstrap: str, certs: Path) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": USERS["alice"],
        "ssl.ca.location": str(certs / "ca.pem"),
    }


def test_groups_describe_over_sasl_ssl_shows_what_a_stock_client_committed(
    secure: str, certs: Path, tmp_path: Path
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = unique("secure"), unique("secure-group")
    admin = AdminClient(stock_config(secure, certs))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(timeout=30)
    offsets = [TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)]
    request = ConsumerGroupTopicPartitions(group, offsets)
    admin.alter_consumer_group_offsets([request])[group].result(timeout=30)

    config = properties(tmp_path / "admin.properties", certs, "admin", USERS["admin"])
    listed = run("groups", "--bootstrap-server", secure, "--command-config", config, "--list")
    assert listed.returncode == 0, listed.stderr
    assert group in listed.stdout.split()
    described = run(
        "groups", "--bootstrap-server", secure, "--command-config", config, "--describe", "--group", group
    )
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines()[1:] if line.strip()]
    assert sorted((row[1], row[2], row[3]) for row in rows) == [(topic, "0", "0"), (topic, "1", "0")]


def test_refusals_are_one_line_errors(secure: str, certs: Path, tmp_path: Path) -> None:
    wrong = properties(tmp_path / "wrong.properties", certs, "admin", "not-the-password")
    refused = run("groups", "--bootstrap-server", secure, "--command-config", wrong, "--list")
    assert refused.returncode == 1
    assert refused.stderr.startswith("kcoord groups: authentication with PLAIN failed at ")
    assert "Traceback" not in refused.stderr

    untrusted = tmp_path / "untrusted.properties"
    untrusted.write_text(
        Path(wrong).read_text().replace(f"ssl.truststore.location={certs / 'ca.pem'}\n", "")
    )  # the system CAs do not know the test CA
    refused = run("transactions", "--bootstrap-server", secure, "--command-config", str(untrusted), "--list")
    assert refused.returncode == 1
    assert "TLS handshake with" in refused.stderr and "certificate verify failed" in refused.stderr

    plaintext = run("groups", "--bootstrap-server", secure, "--list")  # no --command-config
    assert plaintext.returncode == 1
    assert plaintext.stderr.startswith("kcoord groups: ") and "Traceback" not in plaintext.stderr

    broken = tmp_path / "broken.properties"
    broken.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=x.Y required user=;\n"
    )
    refused = run("acls", "--bootstrap-server", secure, "--command-config", str(broken), "--list")
    assert refused.returncode == 1
    assert "Value not specified for key 'user' in JAAS config" in refused.stderr


def scram_properties(path: Path, certs: Path, mechanism: str, user: str, password: str) -> str:
    properties(path, certs, user, password)
    text = path.read_text().replace("sasl.mechanism=PLAIN", f"sasl.mechanism={mechanism}")
    path.write_text(text.replace(PLAIN_MODULE, "org.apache.kafka.common.security.scram.ScramLoginModule"))
    return str(path)


def test_users_alter_then_scram_logins_with_a_stock_client_and_with_the_tools(
    secure: str, certs: Path, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient

    admin = properties(tmp_path / "admin.properties", certs, "admin", USERS["admin"])
    users = ["users", "--bootstrap-server", secure, "--command-config", admin]
    user = unique("carol")
    add = "SCRAM-SHA-256=[iterations=8192,password=carol-256],SCRAM-SHA-512=[password=carol-512]"
    altered = run(*users, "--alter", "--user", user, "--add-config", add)
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout == f"Completed updating config for user {user}.\n"
    described = run(*users, "--describe", "--user", user)
    assert described.returncode == 0, described.stderr
    prefix = f"SCRAM credential configs for user-principal '{user}' are "
    assert described.stdout.startswith(prefix)
    assert set(described.stdout.removeprefix(prefix).strip().split(", ")) == {
        "SCRAM-SHA-256=iterations=8192",
        "SCRAM-SHA-512=iterations=4096",
    }

    def stock_login(password: str, timeout: float = 10) -> bool:
        config = {
            **stock_config(secure, certs),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password,
        }
        try:
            AdminClient(config).list_topics(timeout=timeout)
        except Exception:  # confluent_kafka.KafkaException: authentication failed (or its timeout)
            return False
        return True

    assert stock_login("carol-256")
    assert not stock_login("carol-512", timeout=2)  # refused at once; the timeout only bounds the wait

    ours = scram_properties(tmp_path / "carol.properties", certs, "SCRAM-SHA-512", user, "carol-512")
    listed = run("groups", "--bootstrap-server", secure, "--command-config", ours, "--list")
    assert listed.returncode == 0, listed.stderr
    deleted = run(*users, "--alter", "--user", user, "--delete-config", "SCRAM-SHA-512")
    assert deleted.returncode == 0, deleted.stderr
    assert run(*users, "--describe", "--user", user).stdout == f"{prefix}SCRAM-SHA-256=iterations=8192\n"
    refused = run("groups", "--bootstrap-server", secure, "--command-config", ours, "--list")
    assert refused.returncode == 1
    assert "authentication with SCRAM-SHA-512 failed" in refused.stderr


def test_oauthbearer_token_file_and_static_token(
    secure: str, certs: Path, issuer: tuple[Any, Path], tmp_path: Path
) -> None:
    import jwt

    def token(expires_in: int) -> str:
        now = int(time.time())
        claims = {"sub": "alice", "iat": now, "exp": now + expires_in}
        return jwt.encode(claims, issuer[0], algorithm="ES256", headers={"kid": "k1"})

    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
    token_file = tmp_path / "token.jwt"
    token_file.write_text(token(300) + "\n")
    config = tmp_path / "oauth.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={certs / 'ca.pem'}\n"
        "sasl.mechanism=OAUTHBEARER\n"
        f"sasl.jaas.config={module} required;\n"
        f"sasl.oauthbearer.token.endpoint.url={token_file.as_uri()}\n"
    )
    listed = run("groups", "--bootstrap-server", secure, "--command-config", str(config), "--list")
    assert listed.returncode == 0, listed.stderr

    expired = config.read_text() + f"kcoord.sasl.oauthbearer.token={token(-120)}\n"  # past the 30 s skew
    config.write_text(expired)
    refused = run("groups", "--bootstrap-server", secure, "--command-config", str(config), "--list")
    assert refused.returncode == 1
    assert "authentication with OAUTHBEARER failed" in refused.stderr


def test_mutual_tls_listener_with_a_client_keystore(certs: Path, tmp_path: Path) -> None:
    """An SSL listener that requires client certificates: the tools present `ssl.keystore.location`
    (the encrypted key opened with `ssl.key.password`); without one the broker refuses the handshake."""
    keyed = tmp_path / "keyed-certs"
    made = run("dev", "certs", "--out", str(keyed), "--client-key-password", "kpw")
    assert made.returncode == 0, made.stderr
    extra = (
        "--ssl-keystore-location", str(keyed / "server.pem"),
        "--ssl-truststore-location", str(keyed / "ca.pem"),
        "--ssl-client-auth", "required",
    )  # fmt: skip
    server = SecureServer(tmp_path / "data", *extra, log_path=tmp_path / "server.log")
    server.listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
    trust = f"security.protocol=SSL\nssl.truststore.location={keyed / 'ca.pem'}\n"
    with_key = tmp_path / "mtls.properties"
    with_key.write_text(trust + f"ssl.keystore.location={keyed / 'client.pem'}\nssl.key.password=kpw\n")
    without_key = tmp_path / "tls.properties"
    without_key.write_text(trust)
    try:
        server.start()
        port = server.wait_for(r"listening on \S+:(\d+) .*listener=SSL").group(1)
        ok = run(
            "groups", "--bootstrap-server", f"localhost:{port}", "--command-config", str(with_key), "--list"
        )
        assert ok.returncode == 0, ok.stderr
        refused = run(
            "groups",
            "--bootstrap-server",
            f"localhost:{port}",
            "--command-config",
            str(without_key),
            "--list",
        )
        assert refused.returncode == 1
        assert refused.stderr.startswith("kcoord groups: ") and "Traceback" not in refused.stderr
    finally:
        server.kill()
