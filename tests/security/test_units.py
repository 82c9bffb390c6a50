"""The pure parts of issue 25's authentication, without a server: listener settings, the SSL principal
rules (Kafka's SslPrincipalMapperTest cases), PLAIN, the session lifetime, the SCRAM credential table
and its records, and OAUTHBEARER's token checks."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from kcoord.broker.sasl_gate import _session_lifetime_ms
from kcoord.broker.security.listeners import Endpoint, parse_endpoints, resolve_listeners
from kcoord.broker.security.oauth import JwksKeys, OAuthBearerServer, TokenValidator
from kcoord.broker.security.sasl import PlainServer, SaslFailure
from kcoord.broker.security.ssl_principal import NoMatchingRule, SslPrincipalMapper
from kcoord.broker.security.tls import TlsFiles, TlsServer
from kcoord.coordinator.metadata.scram_credentials import CredentialRecord, ScramCredentials
from kcoord.coordinator.metadata.scram_formatter import salted_password
from kcoord.coordinator.persistence.codec import from_storage, render, to_storage
from kcoord.protocol.errors import ErrorCode
from kcoord.wiring.config import parse_serve_argv
from tests.security.certs import make_pki


def test_listeners_join_the_map_and_the_advertised_entries() -> None:
    listeners = parse_endpoints("PLAINTEXT://:9092, internal://10.0.0.1:9093")
    assert listeners == (Endpoint("PLAINTEXT", "", 9092), Endpoint("INTERNAL", "10.0.0.1", 9093))
    with pytest.raises(ValueError, match="security protocol map"):
        resolve_listeners(listeners, None, None)  # INTERNAL is no protocol: Kafka needs a map entry
    resolved = resolve_listeners(
        listeners,
        parse_endpoints("INTERNAL://kcoord:19093"),
        (("PLAINTEXT", "PLAINTEXT"), ("INTERNAL", "SASL_SSL")),
    )
    assert [(r.name, r.security_protocol, r.host, r.advertised) for r in resolved] == [
        ("PLAINTEXT", "PLAINTEXT", "0.0.0.0", None),
        ("INTERNAL", "SASL_SSL", "10.0.0.1", ("kcoord", 19093)),
    ]
    with pytest.raises(ValueError):
        parse_endpoints("PLAINTEXT://:1,PLAINTEXT://:2")
    with pytest.raises(ValueError, match="not among the listeners"):
        resolve_listeners(listeners[:1], parse_endpoints("SSL://x:1"), None)


def test_the_default_is_one_plaintext_listener_and_the_flags_must_fit() -> None:
    [listener] = parse_serve_argv([]).resolved_listeners()
    assert (listener.name, listener.security_protocol, listener.port) == ("PLAINTEXT", "PLAINTEXT", 9092)
    for argv in (
        ["--listen", ":1", "--listeners", "PLAINTEXT://:2"],
        ["--listeners", "SSL://:1"],  # no keystore
        ["--advertised-listeners", "PLAINTEXT://x:1"],  # without --listeners
        ["--listeners", "SASL_PLAINTEXT://:1", "--sasl-enabled-mechanisms", "OAUTHBEARER"],  # no JWKS
        ["--ssl-client-auth", "required", "--listeners", "SSL://:1", "--ssl-keystore-location", "k"],  # no CA
        ["--ssl-principal-mapping-rules", "RULE:^(.*$/$1/"],  # a broken pattern
    ):
        with pytest.raises(SystemExit):
            parse_serve_argv(argv)
    config = parse_serve_argv(
        [], env={"KCOORD_LISTENERS": "SASL_SSL://:9094", "KCOORD_SSL_KEYSTORE_LOCATION": "k"}
    )
    assert config.resolved_listeners()[0].uses_sasl and config.sasl_enabled_mechanisms[0] == "PLAIN"


def test_ssl_principal_mapping_rules_as_kafka() -> None:
    mapper = SslPrincipalMapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT"
    )
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "Duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    assert (
        SslPrincipalMapper("RULE:^CN=(.*),O=(.*)$/$1 $3/").name("CN=a,O=b") == "a $3"
    )  # no group 3: literal
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=x")
    with pytest.raises(ValueError):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/X")


def test_plain_checks_like_kafkas_plain_sasl_server() -> None:
    users = {"alice": b"pw"}
    assert PlainServer(users).evaluate(b"\0alice\0pw") == b""
    for token, message in (
        (b"alice\0pw", "expected 3 tokens, got 2"),
        (b"\0\0pw", "username not specified"),
        (b"\0alice\0", "password not specified"),
        (b"\0alice\0bad", "Invalid username or password"),
        (b"\0mallory\0pw", "Invalid username or password"),
        (b"bob\0alice\0pw", "authorization id that is different"),
    ):
        with pytest.raises(SaslFailure, match=message):
            PlainServer(users).evaluate(token)


@pytest.mark.parametrize(
    ("expiry", "max_reauth", "lifetime"),
    [(None, 0, None), (None, 500, 500), (10_000, 0, 9_000), (10_000, 500, 500), (900, 0, 0)],
)
def test_session_lifetime_is_kafkas(expiry: int | None, max_reauth: int, lifetime: int | None) -> None:
    assert _session_lifetime_ms(expiry, max_reauth, now_ms=1_000) == lifetime


class _MemoryLog:
    def __init__(self) -> None:
        self.records: list[CredentialRecord] = []

    def append(self, records: Sequence[CredentialRecord], on_done) -> None:  # type: ignore[no-untyped-def]
        self.records += records
        on_done(None)


def test_scram_credentials_are_validated_stored_as_records_and_replayed() -> None:
    memory = _MemoryLog()
    table = ScramCredentials(memory)
    salted = salted_password("SCRAM-SHA-256", "pw", b"salt", 4096)
    upsert = {"name": "bob", "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": salted}
    answers: list[list[dict[str, object]]] = []
    table.alter(
        [],
        [upsert, {**upsert, "name": "eve", "iterations": 16385}, {**upsert, "name": "", "mechanism": 3}],
        answers.append,
    )
    assert [(a["user"], a["error_code"], a["error_message"]) for a in answers[0]] == [
        ("bob", 0, None),
        ("eve", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    ]
    table.alter([], [{**upsert, "mechanism": 0, "name": "zed"}], answers.append)
    assert answers[1][0]["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert table.describe(None) == [
        {"user": "bob", "credential_infos": [{"mechanism": 1, "iterations": 4096}]}
    ]
    replayed = ScramCredentials(_MemoryLog())
    for record in memory.records:
        stored = to_storage(record)
        assert stored.type == 9 and b"salt" not in render(stored).encode()
        replayed.apply(from_storage(stored))  # type: ignore[arg-type]
    assert replayed.lookup("bob", "SCRAM-SHA-256") == table.lookup("bob", "SCRAM-SHA-256") is not None
    table.alter([{"name": "bob", "mechanism": 1}], [], answers.append)
    assert answers[2] == [{"user": "bob", "error_code": 0, "error_message": None}]
    assert (
        table.lookup("bob", "SCRAM-SHA-256") is None
        and from_storage(to_storage(memory.records[-1])) == memory.records[-1]
    )


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> tuple[ec.EllipticCurvePrivateKey, TokenValidator]:
    key = ec.generate_private_key(ec.SECP256R1())
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**json.loads(ECAlgorithm.to_jwk(key.public_key())), "kid": "k"}]}))
    keys = JwksKeys(Path(jwks).as_uri(), 3_600_000)
    keys.refresh()
    return key, TokenValidator(keys, audience=("kcoord",), issuer="iss", sub_claim="sub")


def _claims(**changes: object) -> dict[str, object]:
    now = int(time.time())
    return {"sub": "alice", "iat": now, "exp": now + 60, "aud": "kcoord", "iss": "iss", **changes}


def test_oauthbearer_tokens_are_checked_as_kip_768(
    signer: tuple[ec.EllipticCurvePrivateKey, TokenValidator],
) -> None:
    key, validator = signer
    good = jwt.encode(_claims(), key, algorithm="ES256", headers={"kid": "k"})
    assert validator.validate(good)[0] == "alice"
    scoped = jwt.encode(_claims(scope=["read", "write"]), key, algorithm="ES256", headers={"kid": "k"})
    assert validator.validate(scoped)[0] == "alice"
    none = jwt.encode(_claims(), None, algorithm="none", headers={"kid": "k"})
    bad = [
        none,
        jwt.encode(_claims(), "a shared secret of 32 bytes or more", algorithm="HS256", headers={"kid": "k"}),
        jwt.encode(_claims(exp=int(time.time()) - 120), key, algorithm="ES256", headers={"kid": "k"}),
        jwt.encode(
            {k: v for k, v in _claims().items() if k != "iat"}, key, algorithm="ES256", headers={"kid": "k"}
        ),
        jwt.encode(_claims(aud="other"), key, algorithm="ES256", headers={"kid": "k"}),
        jwt.encode(_claims(iss="other"), key, algorithm="ES256", headers={"kid": "k"}),
        jwt.encode(_claims(sub=""), key, algorithm="ES256", headers={"kid": "k"}),
        jwt.encode(_claims(scope=["read", " "]), key, algorithm="ES256", headers={"kid": "k"}),
        good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB"),
    ]
    for token in bad:
        with pytest.raises(ValueError):
            validator.validate(token)
    server = OAuthBearerServer(validator)
    assert server.evaluate(f"n,,\x01auth=Bearer {none}\x01\x01".encode()) == b'{"status":"invalid_token"}'
    with pytest.raises(SaslFailure, match="invalid_token"):
        server.evaluate(b"\x01")  # the client's acknowledgement fails the exchange


def test_tls_files_are_reloaded_when_they_change(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    keystore = tmp_path / "server.pem"
    shutil.copy(pki.server, keystore)
    server = TlsServer(TlsFiles(keystore))
    first = server.current
    assert not server.reload_if_changed()
    keystore.write_text("not a PEM file")
    os.utime(keystore, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert not server.reload_if_changed() and server.current is first  # broken files: kept
    shutil.copy(pki.other_server, keystore)
    os.utime(keystore, ns=(time.time_ns(), time.time_ns() + 2 * 10**9))
    assert server.reload_if_changed() and server.current is not first and server.reloads == 1
