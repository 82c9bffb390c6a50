"""OAUTHBEARER's unsecured development mode, an explicit opt-in (`--sasl-oauthbearer-unsecured`).

Kafka's default server callback handler for OAUTHBEARER is OAuthBearerUnsecuredValidatorCallbackHandler:
it accepts unsigned JWTs (`alg: none`), so whoever connects names the principal they like. KafkaJS's and
librdkafka's (`enable.sasl.oauthbearer.unsecure.jwt=true`) tests use it. kcoord serves it only when asked,
logs a warning at startup, and never together with the KIP-768 validator (oauth.py).

The checks are Kafka's, in Kafka's order (OAuthBearerUnsecuredJws's constructor, then
OAuthBearerUnsecuredValidatorCallbackHandler.handleCallback through OAuthBearerValidationUtils):
the compact serialization has three parts and no `..`; header and claims are base64 (Java's basic
decoder: `-` and `_` are refused, padding optional) JSON objects; `alg` is `none` and the signature
empty; `exp` is a number; the principal claim (`sub`) is a non-blank string; `iat`, if present, a
number not after now + skew; now - skew before `exp`; `exp` after `iat`; every required scope in the
token's scope claim (a list, or one string = one scope). A failure answers the client with
`{"status":"invalid_token"}` (`{"status":"insufficient_scope", "scope":"[...]"}` for a missing scope);
the client's `%x01` then fails the exchange with that text (oauth.OAuthBearerServer).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcoord.broker.security.oauth import InvalidToken
from kcoord.broker.security.sasl import SaslFailure

__all__ = ["UNSECURED_WARNING", "UnsecuredJws", "UnsecuredValidator"]

log = logging.getLogger("kcoord.oauth")

UNSECURED_WARNING = (
    "OAUTHBEARER: unsecured development mode (--sasl-oauthbearer-unsecured): unsigned alg=none tokens "
    "are accepted and name any principal they like; never use it where security matters"
)

_BASE64 = re.compile(r"[A-Za-z0-9+/]*")
_LONG_MAX = 2**63 - 1
Claim = str | int | float | list[str]


def _java_list(items: tuple[str, ...]) -> str:
    """A Java List's toString: what Kafka puts in the insufficient_scope challenge and its message."""
    return "[" + ", ".join(items) + "]"


def _as_text(value: object) -> str:
    """Jackson's JsonNode.asText: a container is "", null is "null", a boolean "true"/"false"."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    return ""


def _convert(value: object) -> Claim:
    """OAuthBearerUnsecuredJws.convert: arrays become lists of text, numbers stay, the rest is text."""
    if isinstance(value, list):
        return [_as_text(element) for element in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return _as_text(value)


def _decode_part(part: str) -> dict[str, Claim]:
    """OAuthBearerUnsecuredJws.toMap: Java's basic Base64 decoder (not the URL one: `-` and `_` are
    malformed; padding may be left out), then the JSON value's fields (none unless it is an object)."""
    if _BASE64.fullmatch(part) is None or len(part) % 4 == 1:
        raise InvalidToken("malformed Base64 URL encoded value")
    try:
        raw = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
    except binascii.Error:
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        text = raw.decode(json.detect_encoding(raw)).lstrip()
        # Jackson's readTree reads one value and ignores what follows it; NaN and Infinity are not JSON.
        value, _ = json.JSONDecoder(parse_constant=_no_constant).raw_decode(text) if text else ({}, 0)
    except (ValueError, RecursionError):  # Jackson bounds the nesting depth (StreamReadConstraints)
        raise InvalidToken("malformed JSON") from None
    if not isinstance(value, dict):
        return {}
    return {str(name): _convert(member) for name, member in value.items()}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _split(token: str) -> list[str]:
    """OAuthBearerUnsecuredJws.extractCompactSerializationSplits (String.split drops trailing empty
    parts; Kafka puts one back when the token ends with a dot)."""
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    while parts and not parts[-1]:
        parts.pop()
    if token.endswith("."):
        parts.append("")
    if len(parts) != 3:
        raise InvalidToken(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
        )
    return parts


def _java_round(seconds: float) -> int:
    """Math.round(seconds * 1000): half up, NaN is 0, saturated at Long's bounds."""
    value = seconds * 1000
    if math.isnan(value):
        return 0
    if value >= _LONG_MAX:
        return _LONG_MAX
    if value <= -_LONG_MAX - 1:
        return -_LONG_MAX - 1
    return math.floor(value + 0.5)


def _claim_type_name(value: Claim) -> str:
    """The Java class Kafka's cast failure names (Jackson's numbers: Integer, Long, BigInteger, Double)."""
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, str):
        return "String"
    if isinstance(value, float):
        return "Double"
    return "Integer" if -(2**31) <= value < 2**31 else "Long" if abs(value) <= _LONG_MAX else "BigInteger"


@dataclass(frozen=True, slots=True)
class UnsecuredJws:
    """A parsed unsecured JWS (OAuthBearerUnsecuredJws): what the checks read."""

    claims: dict[str, Claim]
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int  # exp in epoch ms, the credential's end (KIP-368)
    expiration_time: float
    issued_at: float | None

    @staticmethod
    def parse(token: str, principal_claim_name: str = "sub", scope_claim_name: str = "scope") -> UnsecuredJws:
        """InvalidToken for a token Kafka refuses; SaslFailure (the exchange ends, generic answer) for a
        header without `alg`, where Kafka's constructor throws a NullPointerException and the broker
        drops the connection."""
        header_part, claims_part, signature = _split(token)
        header, claims = _decode_part(header_part), _decode_part(claims_part)
        if "alg" not in header:
            raise SaslFailure("JWS header must have an Algorithm value", generic=True)
        if header["alg"] != "none":  # a list's toString is never "none"
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if signature:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        scope = _scope(claims, scope_claim_name)
        expiration_time = _number(claims, "exp")
        if expiration_time is None:
            raise InvalidToken("No expiration time in JWT")
        principal = _string(claims, principal_claim_name)
        if principal is None or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {principal_claim_name}")
        return UnsecuredJws(
            claims, principal, scope, _java_round(expiration_time), expiration_time, _number(claims, "iat")
        )


def _number(claims: dict[str, Claim], name: str) -> float | None:
    """OAuthBearerUnsecuredJws.claim(name, Number.class)."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, int | float):  # never a bool: _convert made booleans text
        try:
            return float(value)
        except OverflowError:  # BigInteger.doubleValue: beyond a double is infinite
            return math.inf if value > 0 else -math.inf
    raise InvalidToken(f"The '{name}' claim was not of type Number: {_claim_type_name(value)}")


def _string(claims: dict[str, Claim], name: str) -> str | None:
    """OAuthBearerUnsecuredJws.claim(name, String.class)."""
    value = claims.get(name)
    if value is None or isinstance(value, str):
        return value
    raise InvalidToken(f"The '{name}' claim was not of type String: {_claim_type_name(value)}")


def _scope(claims: dict[str, Claim], name: str) -> frozenset[str]:
    """OAuthBearerUnsecuredJws.calculateScope: a string is ONE scope (trimmed; blank = none), a list
    is its non-blank items trimmed; anything else is a cast failure."""
    value = claims.get(name)
    if isinstance(value, str):
        return frozenset({value.strip()}) if value.strip() else frozenset()
    if value is None or isinstance(value, list):
        return frozenset(item.strip() for item in value or () if item.strip())
    raise InvalidToken(f"The '{name}' claim was not of type List: {_claim_type_name(value)}")


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """OAuthBearerUnsecuredValidatorCallbackHandler with its four options; `validate` returns
    (principal, exp in epoch ms) or raises InvalidToken."""

    principal_claim_name: str = "sub"  # unsecuredValidatorPrincipalClaimName
    scope_claim_name: str = "scope"  # unsecuredValidatorScopeClaimName
    required_scope: tuple[str, ...] = ()  # unsecuredValidatorRequiredScope (space-delimited there)
    allowable_clock_skew_ms: int = 0  # unsecuredValidatorAllowableClockSkewMs
    now_ms: Callable[[], int] = field(default=lambda: time.time_ns() // 1_000_000)

    def validate(self, token: str) -> tuple[str, int]:
        jws = UnsecuredJws.parse(token, self.principal_claim_name, self.scope_claim_name)
        now, skew = self.now_ms(), self.allowable_clock_skew_ms
        # OAuthBearerValidationUtils.validateIssuedAt (iat optional), validateExpirationTime,
        # validateTimeConsistency, validateScope, in handleCallback's order.
        if jws.issued_at is not None and 1000 * jws.issued_at > now + skew:
            raise InvalidToken(
                f"The Issued At value ({jws.issued_at:f} seconds) was after the indicated time ({now} ms) "
                f"plus allowable clock skew ({skew} ms)"
            )
        if now - skew >= 1000 * jws.expiration_time:
            raise InvalidToken(
                f"The indicated time ({now} ms) minus allowable clock skew ({skew} ms) was on or after the "
                f"Expiration Time value ({jws.expiration_time:f} seconds)"
            )
        if jws.issued_at is not None and jws.expiration_time <= jws.issued_at:
            raise InvalidToken(
                f"The Expiration Time time ({jws.expiration_time:f} seconds) was not after the Issued At "
                f"time ({jws.issued_at:f} seconds)"
            )
        self._check_scope(jws.scope)
        log.debug("OAUTHBEARER: unsecured token validated, principal %s: %s", jws.principal_name, jws.claims)
        return jws.principal_name, jws.lifetime_ms

    def _check_scope(self, scope: frozenset[str]) -> None:
        for required in self.required_scope:
            if required not in scope:
                raise InvalidToken(
                    f"The provided scope ({_java_list(tuple(sorted(scope)))}) was missing a required scope "
                    f"({required}).  All required scope elements: {_java_list(self.required_scope)}",
                    status="insufficient_scope",
                    scope=_java_list(self.required_scope),
                )
