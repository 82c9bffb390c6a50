"""`--command-config FILE`: Kafka client properties (the file kafka-*.sh tools take) turned into how the
tools connect: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, with TLS from the standard library and SASL
PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER (kcoord/client_cli/sasl_client.py).

Properties read (Kafka's names; CommonClientConfigs, SslConfigs, SaslConfigs):
  security.protocol                      PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
  ssl.truststore.location                PEM CA bundle (else the system's CAs); ssl.truststore.certificates:
                                         the PEM text itself
  ssl.keystore.location, ssl.key.password   PEM private key + certificate chain (mTLS), its key's password
  ssl.keystore.type / ssl.truststore.type   PEM only (stdlib ssl reads no JKS or PKCS12)
  ssl.endpoint.identification.algorithm  https (default: the certificate must name the host) or empty
  sasl.mechanism                         PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's default
                                         GSSAPI is not supported)
  sasl.jaas.config                       PlainLoginModule / ScramLoginModule username="..." password="...";
                                         OAuthBearerLoginModule with extension_<name>="..." options
  sasl.oauthbearer.token.endpoint.url    file:/path/to/token (Kafka's FileTokenRetriever: the JWT in a file)
  kcoord.sasl.oauthbearer.token          a static JWT (kcoord's own property; Kafka has none)
Other properties are accepted and ignored, as a Kafka tool ignores a consumer-only setting; no property
names a class that is loaded (docs/compat.md).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from kcoord.client_cli.jaas import JaasError, LoginModule, parse_jaas
from kcoord.client_cli.sasl_client import (
    SCRAM_HASHES,
    OAuthBearerClient,
    PlainClient,
    SaslMechanismClient,
    ScramClient,
)

__all__ = ["PLAINTEXT", "ClientSecurity", "ConfigError", "load_command_config", "parse_properties"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", *SCRAM_HASHES, "OAUTHBEARER")
# The login modules whose options the tools read (the class is never loaded: its name selects).
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class ConfigError(ValueError):
    """A --command-config problem, in one line."""


@dataclass(frozen=True)
class ClientSecurity:
    """How every connection of one command is made: TLS or not, and which SASL exchange follows
    ApiVersions. `sasl` is a factory: a fresh mechanism client (fresh nonce) per connection."""

    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: Callable[[], SaslMechanismClient] | None = None


PLAINTEXT = ClientSecurity()


# -- java.util.Properties ---------------------------------------------------------------------------------


def _logical_lines(text: str) -> list[str]:
    """Lines with `\\`-continuations joined (the next line's leading blanks dropped), comments and
    blank lines removed, as Properties.load reads them."""
    lines, current = [], ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not current and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            current += line[:-1]
            continue
        lines.append(current + line)
        current = ""
    if current:
        lines.append(current)
    return lines


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            i += 1
            ch = text[i]
            if ch == "u" and i + 4 < len(text):
                ch, i = chr(int(text[i + 1 : i + 5], 16)), i + 4
            else:
                ch = _ESCAPES.get(ch, ch)
        out.append(ch)
        i += 1
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    """Key, then value: the key ends at the first unescaped `=`, `:` or blank; blanks around the
    separator are skipped."""
    i = 0
    while i < len(line) and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """A java.util.Properties file (Kafka's Utils.loadProps): `key=value`, `key: value` or `key value`,
    `#`/`!` comments, backslash continuations and escapes; a later key wins."""
    return dict(_split_key(line) for line in _logical_lines(text))


# -- properties -> ClientSecurity -----------------------------------------------------------------------


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _ssl_context(props: dict[str, str]) -> ssl.SSLContext:
    for name in ("ssl.keystore.type", "ssl.truststore.type"):
        if props.get(name, "PEM").upper() != "PEM":
            raise ConfigError(f"{name}={props[name]} is not supported: these tools read PEM files only")
    trust, trust_text = props.get("ssl.truststore.location"), props.get("ssl.truststore.certificates")
    try:
        context = ssl.create_default_context(cafile=trust or None, cadata=trust_text or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the trust store {trust or '(inline)'}: {exc}") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # Kafka's ssl.enabled.protocols: TLSv1.2,TLSv1.3
    # ssl.endpoint.identification.algorithm: "https" (the default) checks the host name; empty does not
    # (the chain is still verified against the trust store).
    context.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    keystore = props.get("ssl.keystore.location")
    if keystore:
        try:
            context.load_cert_chain(keystore, password=props.get("ssl.key.password") or None)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load the key store {keystore}: {exc}") from None
    return context


def _login_module(props: dict[str, str], mechanism: str) -> LoginModule:
    text = props.get("sasl.jaas.config")
    if not text:
        raise ConfigError(f"sasl.mechanism={mechanism} needs sasl.jaas.config (a JAAS file is not read)")
    try:
        modules = parse_jaas(text)
    except JaasError as exc:
        raise ConfigError(f"sasl.jaas.config: {exc}") from None
    if len(modules) != 1:  # JaasContext.loadClientContext
        raise ConfigError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]


def _password_client(module: LoginModule, mechanism: str) -> Callable[[], SaslMechanismClient]:
    if module.name not in (PLAIN_MODULE, SCRAM_MODULE):
        raise ConfigError(f"sasl.jaas.config: {mechanism} needs {PLAIN_MODULE} or {SCRAM_MODULE}")
    username, password = module.options.get("username"), module.options.get("password")
    if username is None or password is None:
        raise ConfigError(f'sasl.jaas.config: {mechanism} needs username="..." and password="..."')
    if module.options.get("tokenauth", "false").lower() == "true":
        raise ConfigError("sasl.jaas.config: tokenauth (delegation tokens) is not supported")
    if mechanism == "PLAIN":
        return lambda: PlainClient(username, password)
    return lambda: ScramClient(mechanism, username, password)


def _oauth_token(props: dict[str, str]) -> str:
    static = props.get("kcoord.sasl.oauthbearer.token")
    if static:
        return static.strip()
    url = props.get("sasl.oauthbearer.token.endpoint.url", "")
    parsed = urlparse(url)
    if parsed.scheme.lower() != "file":
        raise ConfigError(
            "OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url=file:/path/to/token or "
            "kcoord.sasl.oauthbearer.token (these tools fetch no tokens from an identity provider)"
        )
    return _read(unquote(parsed.path), "the OAUTHBEARER token file").strip()  # FileTokenRetriever trims


def _oauth_client(module: LoginModule, props: dict[str, str]) -> Callable[[], SaslMechanismClient]:
    if module.name != OAUTH_MODULE:
        raise ConfigError(f"sasl.jaas.config: OAUTHBEARER needs {OAUTH_MODULE}")
    token = _oauth_token(props)
    if not token:
        raise ConfigError("the OAUTHBEARER token is empty")
    extensions = {
        k.removeprefix("extension_"): v for k, v in module.options.items() if k.startswith("extension_")
    }
    return lambda: OAuthBearerClient(token, extensions)


def _sasl(props: dict[str, str]) -> Callable[[], SaslMechanismClient]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(
            f"sasl.mechanism={mechanism} is not supported (these tools speak {', '.join(MECHANISMS)})"
        )
    module = _login_module(props, mechanism)
    if mechanism == "OAUTHBEARER":
        return _oauth_client(module, props)
    return _password_client(module, mechanism)


def security_from_properties(props: dict[str, str]) -> ClientSecurity:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}")
    context = _ssl_context(props) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _sasl(props) if protocol.startswith("SASL_") else None
    return ClientSecurity(protocol, context, sasl)


def load_command_config(path: str | None) -> ClientSecurity:
    """The security settings of a --command-config file (PLAINTEXT when there is none)."""
    if path is None:
        return PLAINTEXT
    return security_from_properties(parse_properties(_read(path, "--command-config")))
