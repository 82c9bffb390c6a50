"""The listener, TLS and SASL flags of `kcoord serve` (issue 25): their parsers, their rows of
`coordinator.config`'s option table, and the check that they fit together (KafkaConfig's validation).

The `Config` fields they fill are in kcoord/wiring/config.py, next to the others; the check reads them
through `SecuritySettings`, so this module does not import the config that imports it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from kcoord.broker.security.listeners import Endpoint, Listener, parse_endpoints, parse_protocol_map
from kcoord.broker.security.ssl_principal import SslPrincipalMapper

__all__ = [
    "SASL_MECHANISMS",
    "SECURITY_METAVARS",
    "SECURITY_OPTIONS",
    "SECURITY_SWITCHES",
    "SecuritySettings",
    "check_security",
]


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _parse_endpoints(text: str) -> tuple[Endpoint, ...]:
    try:
        return parse_endpoints(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parse_protocol_map(text: str) -> tuple[tuple[str, str], ...]:
    try:
        return parse_protocol_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_client_auth(text: str) -> str:
    """ssl.client.auth: none | requested | required."""
    value = text.strip().lower()
    if value not in ("none", "requested", "required"):
        raise argparse.ArgumentTypeError(f"expected none, requested or required, got {text!r}")
    return value


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def parse_mechanisms(text: str) -> tuple[str, ...]:
    """sasl.enabled.mechanisms: a comma-separated list of the mechanisms kcoord serves."""
    names = tuple(name.strip().upper() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in SASL_MECHANISMS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected a list of {', '.join(SASL_MECHANISMS)}, got {text!r}")
    return names


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _file(text: str) -> Path:
    return Path(text)


def _text(text: str) -> str:
    return text


def _claim_name(text: str) -> str:
    """A claim name of the unsecured validator, trimmed (Kafka trims its options) and not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a claim name, got a blank one")
    return text.strip()


# OAuthBearerScopeUtils.INDIVIDUAL_SCOPE_ITEM_PATTERN: RFC 6749's scope-token characters.
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")


def _scope(text: str) -> tuple[str, ...]:
    """unsecuredValidatorRequiredScope: space-delimited scope items (OAuthBearerScopeUtils.parseScope)."""
    items = tuple(item for item in text.strip().split(" ") if item)
    for item in items:
        if _SCOPE_ITEM.fullmatch(item) is None:
            raise argparse.ArgumentTypeError(f"Invalid scope value: {item}")
    return items


SECURITY_OPTIONS: tuple[tuple[str, object, str], ...] = (
    ("--listeners", _parse_endpoints, "NAME://host:port,... (listeners); default: --listen as PLAINTEXT"),
    ("--advertised-listeners", _parse_endpoints, "NAME://host:port,... returned to clients per listener"),
    (
        "--listener-security-protocol-map",
        _parse_protocol_map,
        "NAME:PROTOCOL,... (PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL); default each protocol to itself",
    ),
    ("--ssl-keystore-location", _file, "PEM file: private key and certificate chain (SSL listeners)"),
    ("--ssl-key-password", _text, "password of the PEM private key, if encrypted"),
    ("--ssl-truststore-location", _file, "PEM CA bundle that client certificates are checked against"),
    ("--ssl-client-auth", parse_client_auth, "none|requested|required (SSL listeners), default none"),
    ("--ssl-principal-mapping-rules", _text, "RULE:pattern/replacement/[LU],...,DEFAULT; default DEFAULT"),
    ("--ssl-handshake-timeout-ms", _positive_int, "TLS handshake deadline, default 10000"),
    (
        "--sasl-enabled-mechanisms",
        parse_mechanisms,
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER; default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    ),
    ("--sasl-plain-users", _text, "PLAIN users as user=password,... (use the env variable)"),
    ("--sasl-plain-users-file", _file, "PLAIN users, one user=password per line"),
    (
        "--sasl-scram-bootstrap-users",
        _text,
        "user=password,...: SCRAM credentials made at startup for users without any (use the env variable)",
    ),
    ("--sasl-server-max-receive-size", _positive_int, "largest frame before authentication, default 524288"),
    (
        "--connection-failed-authentication-delay-ms",
        _non_negative_int,
        "delay before a failed authentication is answered and closed, default 100",
    ),
    ("--connections-max-reauth-ms", _non_negative_int, "SASL session lifetime (KIP-368), default 0 = none"),
    ("--sasl-oauthbearer-jwks-endpoint-url", _text, "OAUTHBEARER: JWKS https:// or file:// URL"),
    ("--sasl-oauthbearer-jwks-endpoint-refresh-ms", _positive_int, "JWKS refresh, default 3600000"),
    ("--sasl-oauthbearer-expected-audience", _parse_list, "OAUTHBEARER: accepted aud values, default any"),
    ("--sasl-oauthbearer-expected-issuer", _text, "OAUTHBEARER: required iss, default any"),
    ("--sasl-oauthbearer-sub-claim-name", _text, "OAUTHBEARER: the principal's claim, default sub"),
    ("--sasl-oauthbearer-scope-claim-name", _text, "OAUTHBEARER: the scope claim, default scope"),
    ("--sasl-oauthbearer-clock-skew-seconds", _non_negative_int, "OAUTHBEARER: exp/iat skew, default 30"),
    # Kafka's default OAUTHBEARER validator (OAuthBearerUnsecuredValidatorCallbackHandler), opt-in: the
    # switch is SECURITY_SWITCHES'; these are its options, named after Kafka's unsecuredValidator* ones.
    (
        "--sasl-oauthbearer-unsecured-validator-principal-claim-name",
        _claim_name,
        "unsecured OAUTHBEARER: the principal's claim (unsecuredValidatorPrincipalClaimName), default sub",
    ),
    (
        "--sasl-oauthbearer-unsecured-validator-scope-claim-name",
        _claim_name,
        "unsecured OAUTHBEARER: the scope claim (unsecuredValidatorScopeClaimName), default scope",
    ),
    (
        "--sasl-oauthbearer-unsecured-validator-required-scope",
        _scope,
        "unsecured OAUTHBEARER: space-separated scopes every token must hold "
        "(unsecuredValidatorRequiredScope), default none",
    ),
    (
        "--sasl-oauthbearer-unsecured-validator-allowable-clock-skew-ms",
        _non_negative_int,
        "unsecured OAUTHBEARER: exp/iat skew (unsecuredValidatorAllowableClockSkewMs), default 0",
    ),
    ("--http-ssl-keystore-location", _file, "PEM key and chain: serve the HTTP endpoint over TLS"),
    ("--http-ssl-key-password", _text, "password of the HTTP PEM private key, if encrypted"),
    ("--http-bearer-token", _text, "require Authorization: Bearer <token> on HTTP (not /healthz, /readyz)"),
)

# Switches without a value; the env variable takes true/false.
SECURITY_SWITCHES: tuple[tuple[str, str], ...] = (
    (
        "--sasl-oauthbearer-unsecured",
        "OAUTHBEARER: accept UNSECURED unsigned (alg none) JWTs, Kafka's default "
        "OAuthBearerUnsecuredValidatorCallbackHandler; for development only, never with the JWKS settings",
    ),
)

SECURITY_METAVARS: dict[object, str] = {
    _claim_name: "CLAIM",
    _scope: "SCOPES",
    _parse_endpoints: "NAME://HOST:PORT,...",
    _parse_protocol_map: "NAME:PROTOCOL,...",
    parse_client_auth: "none|requested|required",
    parse_mechanisms: "MECH[,MECH]",
    _parse_list: "A[,B]",
    _text: "TEXT",
    _file: "FILE",
}


class SecuritySettings(Protocol):
    """The settings `check_security` reads (`kcoord.wiring.config.Config` has them)."""

    @property
    def listeners(self) -> tuple[Endpoint, ...] | None: ...

    @property
    def advertised_listeners(self) -> tuple[Endpoint, ...] | None: ...

    @property
    def listener_security_protocol_map(self) -> tuple[tuple[str, str], ...] | None: ...

    @property
    def ssl_keystore_location(self) -> Path | None: ...

    @property
    def ssl_truststore_location(self) -> Path | None: ...

    @property
    def ssl_client_auth(self) -> str: ...

    @property
    def ssl_principal_mapping_rules(self) -> str: ...

    @property
    def sasl_enabled_mechanisms(self) -> tuple[str, ...]: ...

    @property
    def sasl_oauthbearer_jwks_endpoint_url(self) -> str | None: ...

    @property
    def sasl_oauthbearer_unsecured(self) -> bool: ...

    def resolved_listeners(self) -> Sequence[Listener]: ...


def check_security(config: SecuritySettings, given: Mapping[str, object]) -> None:
    """The listener, TLS and SASL settings must fit together (KafkaConfig's validation, in words)."""
    if config.listeners is not None and ("listen" in given or "advertised_listener" in given):
        raise SystemExit("kcoord: --listeners replaces --listen/--advertised-listener: give one or the other")
    if config.listeners is None and (
        config.advertised_listeners is not None or config.listener_security_protocol_map is not None
    ):
        raise SystemExit("kcoord: --advertised-listeners and the protocol map need --listeners")
    try:
        listeners = config.resolved_listeners()
    except ValueError as exc:
        raise SystemExit(f"kcoord: {exc}") from None
    if any(listener.uses_tls for listener in listeners) and config.ssl_keystore_location is None:
        raise SystemExit("kcoord: an SSL or SASL_SSL listener needs --ssl-keystore-location")
    if config.ssl_client_auth != "none" and config.ssl_truststore_location is None:
        raise SystemExit("kcoord: --ssl-client-auth requested|required needs --ssl-truststore-location")
    try:
        SslPrincipalMapper(config.ssl_principal_mapping_rules)
    except (ValueError, re.error) as exc:
        raise SystemExit(f"kcoord: --ssl-principal-mapping-rules: {exc}") from None
    sasl = any(listener.uses_sasl for listener in listeners)
    oauthbearer = sasl and "OAUTHBEARER" in config.sasl_enabled_mechanisms
    _check_unsecured_oauthbearer(config, given, oauthbearer)
    secured = not config.sasl_oauthbearer_unsecured
    if oauthbearer and secured and not config.sasl_oauthbearer_jwks_endpoint_url:
        raise SystemExit(
            "kcoord: OAUTHBEARER needs --sasl-oauthbearer-jwks-endpoint-url "
            "(or, for development only, --sasl-oauthbearer-unsecured)"
        )


_UNSECURED = "sasl_oauthbearer_unsecured"


def _check_unsecured_oauthbearer(config: SecuritySettings, given: Mapping[str, object], served: bool) -> None:
    """--sasl-oauthbearer-unsecured is an explicit choice: with its own options only, never beside the
    KIP-768 validator's settings, and only where OAUTHBEARER is served (else it would do nothing)."""
    options = [name for name in given if name.startswith(_UNSECURED + "_")]
    if not config.sasl_oauthbearer_unsecured:
        if options:
            raise SystemExit(f"kcoord: {_flag(options[0])} needs --sasl-oauthbearer-unsecured")
        return
    secured = [n for n in given if n.startswith("sasl_oauthbearer_") and not n.startswith(_UNSECURED)]
    if secured:
        raise SystemExit(
            f"kcoord: --sasl-oauthbearer-unsecured and {_flag(secured[0])} exclude each other: "
            "unsigned development tokens or the JWKS validator, not both"
        )
    if not served:
        raise SystemExit(
            "kcoord: --sasl-oauthbearer-unsecured needs OAUTHBEARER in --sasl-enabled-mechanisms "
            "and a SASL listener"
        )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
