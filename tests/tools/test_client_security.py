"""--command-config: Java properties, sasl.jaas.config parsed as data, the SASL client mechanisms (SCRAM
against RFC 7677's and RFC 5802's test vectors), and TLS from the properties against a real TLS
listener made from `kcoord dev certs`' files."""

from __future__ import annotations

import base64
import re
import socket
import ssl
import threading
from pathlib import Path

import pytest

from kcoord.client_cli.client_config import (
    ConfigError,
    load_command_config,
    parse_properties,
    security_from_properties,
)
from kcoord.client_cli.dev_certs import make_certs
from kcoord.client_cli.jaas import JaasError, parse_jaas
from kcoord.client_cli.sasl_client import (
    OAuthBearerClient,
    PlainClient,
    SaslError,
    ScramClient,
    salted_password,
)

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a;b";'
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required username=bob password='p=w';"


# -- java.util.Properties --------------------------------------------------------------------------------


def test_properties_separators_comments_continuations_and_escapes() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "security.protocol=SASL_SSL\n"
        "  sasl.mechanism : SCRAM-SHA-256\n"
        "ssl.truststore.location /etc/ca.pem\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" \\\n'
        '    password="x\\\\y";\n'
        "key\\=with\\:seps = v\\u00e9\n"
        "empty=\n"
        "security.protocol=SSL\n"
    )
    props = parse_properties(text)
    assert props == {
        "security.protocol": "SSL",  # a later key wins
        "sasl.mechanism": "SCRAM-SHA-256",
        "ssl.truststore.location": "/etc/ca.pem",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="admin" password="x\\y";',
        "key=with:seps": "vé",
        "empty": "",
    }


# -- sasl.jaas.config ------------------------------------------------------------------------------------


def test_jaas_options_quoted_and_bare_with_comments() -> None:
    (module,) = parse_jaas(
        "/* c */ org.apache.kafka.common.security.plain.PlainLoginModule Required // line\n"
        ' username="al\\"ice" password=\'s;e=c,r"et\' other_key=bare-word.x $v=x;'
    )
    assert module.name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert module.flag == "REQUIRED"
    assert module.options == {
        "username": 'al"ice',
        "password": 's;e=c,r"et',
        "other_key": "bare-word.x",
        "$v": "x",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("a.B", "Login module control flag not specified in JAAS config"),
        ("a.B maybe;", "Invalid login module control flag 'maybe' in JAAS config"),
        ('a.B required username="x"', "JAAS config entry not terminated by semi-colon"),
        ("a.B required username=;", "Value not specified for key 'username' in JAAS config"),
        ("a.B required port=9092;", "Value not specified for key 'port' in JAAS config"),  # a number
    ],
)
def test_jaas_errors_are_kafkas(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=f"^{message}$"):
        parse_jaas(text)


def test_two_login_modules_are_refused_for_a_client() -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN_JAAS * 2,
    }
    with pytest.raises(ConfigError, match="contains 2 login modules, should be 1 module"):
        security_from_properties(props)


def test_an_unknown_login_module_selects_nothing_and_loads_nothing() -> None:
    jaas = 'com.sun.security.auth.module.JndiLoginModule required user.provider.url="ldap://x/";'
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}
    with pytest.raises(
        ConfigError, match=re.escape("PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule")
    ):
        security_from_properties(props)


# -- mechanisms ------------------------------------------------------------------------------------------


def test_plain_and_scram_from_properties() -> None:
    plain = security_from_properties(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS}
    )
    assert plain.ssl_context is None and plain.sasl is not None
    assert plain.sasl().initial() == b"\0alice\0a;b"
    scram = security_from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM_JAAS,
        }
    )
    assert scram.sasl is not None
    first, second = scram.sasl(), scram.sasl()
    assert first.mechanism == "SCRAM-SHA-512"
    assert first.initial().startswith(b"n,,n=bob,r=")
    assert first.initial() != second.initial()  # a fresh nonce per connection


def test_unsupported_mechanism_and_missing_jaas() -> None:
    with pytest.raises(ConfigError, match=re.escape("sasl.mechanism=GSSAPI is not supported")):
        security_from_properties({"security.protocol": "SASL_SSL"})
    with pytest.raises(ConfigError, match=re.escape("needs sasl.jaas.config")):
        security_from_properties({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    with pytest.raises(ConfigError, match=re.escape("security.protocol=TLS is not one of")):
        security_from_properties({"security.protocol": "TLS"})


def test_scram_sha256_rfc7677_test_vector() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.initial() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.respond(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert client.respond(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_refuses_a_wrong_server_signature_low_iterations_and_a_foreign_nonce() -> None:
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvY,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    client.respond(server_first)
    with pytest.raises(SaslError, match="invalid server signature"):
        client.respond(b"v=" + base64.b64encode(b"\0" * 32))
    low = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    with pytest.raises(SaslError, match="Requested iterations 4095 is less than the minimum 4096"):
        low.respond(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095")
    foreign = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    with pytest.raises(SaslError, match="invalid SCRAM server first message"):
        foreign.respond(b"r=xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_scram_escapes_the_user_name_and_does_not_saslprep() -> None:
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "pass\u00a0word", nonce="n")
    assert client.initial() == b"n,,n=a=3Db=2Cc,r=n"
    assert client._password == "pass\u00a0word".encode()  # SASLprep would map U+00A0 to a space


def test_oauthbearer_initial_response_and_error_challenge(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  eyJ.a.b\n")
    jaas = (
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required extension_traceId="t1";'
    )
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": jaas,
        "sasl.oauthbearer.token.endpoint.url": f"file://{token_file}",
    }
    security = security_from_properties(props)
    assert security.sasl is not None
    client = security.sasl()
    assert client.initial() == b"n,,\x01auth=Bearer eyJ.a.b\x01traceId=t1\x01\x01"
    assert client.respond(b'{"status":"invalid_token"}') == b"\x01"
    assert OAuthBearerClient("tok").respond(b"") is None
    static = security_from_properties({**props, "kcoord.sasl.oauthbearer.token": "abc"})
    assert (
        static.sasl is not None and static.sasl().initial() == b"n,,\x01auth=Bearer abc\x01traceId=t1\x01\x01"
    )
    with pytest.raises(ConfigError, match="fetch no tokens"):
        security_from_properties({**props, "sasl.oauthbearer.token.endpoint.url": "https://idp/token"})


def test_plain_client_is_done_after_the_servers_empty_answer() -> None:
    assert PlainClient("u", "p").respond(b"") is None


# -- TLS ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_certs(tmp_path_factory.mktemp("certs"), ["localhost"], key_password="kpw")


def _tls_server(certs: dict[str, Path], require_client: bool) -> tuple[socket.socket, list[str]]:
    """A one-connection TLS server on a free loopback port; the peer's CN lands in the list."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certs["ca.pem"]))
    context.load_cert_chain(certs["server.pem"])
    context.verify_mode = ssl.CERT_REQUIRED if require_client else ssl.CERT_NONE
    listener = socket.create_server(("127.0.0.1", 0))
    peers: list[str] = []

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with conn, context.wrap_socket(conn, server_side=True) as tls:
                cert = tls.getpeercert()
                peers.append(dict(x[0] for x in cert["subject"])["commonName"] if cert else "")
                tls.sendall(b"ok")
        except ssl.SSLError:
            peers.append("handshake failed")

    threading.Thread(target=serve, daemon=True).start()
    return listener, peers


def _write_config(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_mutual_tls_from_command_config(certs: dict[str, Path], tmp_path: Path) -> None:
    listener, peers = _tls_server(certs, require_client=True)
    config = _write_config(
        tmp_path / "client.properties",
        [
            "security.protocol=SSL",
            f"ssl.truststore.location={certs['ca.pem']}",
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={certs['client.pem']}",
            "ssl.key.password=kpw",
        ],
    )
    security = load_command_config(config)
    assert security.ssl_context is not None
    with (
        listener,
        socket.create_connection(listener.getsockname()) as raw,
        security.ssl_context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.recv(2) == b"ok"
    assert peers == ["kcoord-client"]


def test_host_name_is_checked_unless_identification_is_off(certs: dict[str, Path], tmp_path: Path) -> None:
    base = ["security.protocol=SSL", f"ssl.truststore.location={certs['ca.pem']}"]
    checked = load_command_config(_write_config(tmp_path / "a.properties", base))
    listener, _ = _tls_server(certs, require_client=False)
    assert checked.ssl_context is not None
    with (
        listener,
        socket.create_connection(listener.getsockname()) as raw,
        pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"),
    ):
        checked.ssl_context.wrap_socket(raw, server_hostname="elsewhere.example")
    lax = load_command_config(
        _write_config(tmp_path / "b.properties", [*base, "ssl.endpoint.identification.algorithm="])
    )
    listener, _ = _tls_server(certs, require_client=False)
    assert lax.ssl_context is not None
    with (
        listener,
        socket.create_connection(listener.getsockname()) as raw,
        lax.ssl_context.wrap_socket(raw, server_hostname="elsewhere.example") as tls,
    ):
        assert tls.recv(2) == b"ok"


def test_keystore_problems_are_one_line_errors(certs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("ssl.keystore.type=JKS is not supported")):
        security_from_properties({"security.protocol": "SSL", "ssl.keystore.type": "JKS"})
    with pytest.raises(ConfigError, match="cannot load the key store"):
        security_from_properties(
            {
                "security.protocol": "SSL",
                "ssl.keystore.location": str(certs["client.pem"]),
                "ssl.key.password": "no",
            }
        )
    with pytest.raises(ConfigError, match="cannot read --command-config"):
        load_command_config(str(tmp_path / "missing.properties"))


def test_scram_client_takes_its_salted_password_from_the_given_function() -> None:
    """bench.security caches PBKDF2 through this hook: the proof must be the one RFC 7677 gives."""
    calls = []

    def salt(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        calls.append((mechanism, password, iterations))
        return salted_password(mechanism, password, salt, iterations)

    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO", salt_password=salt)
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.respond(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert calls == [("SCRAM-SHA-256", b"pencil", 4096)]
