"""OAUTHBEARER (RFC 7628) with JWT validation as Kafka's KIP-768 validator does it
(OAuthBearerSaslServer, OAuthBearerClientInitialResponse, ValidatorAccessTokenValidator).

The token must be a JWS signed by a key of the JWKS (a file:// or https:// URL, fetched and refreshed
in a worker thread, never on the event loop; an unknown `kid` asks for an early refresh, at most every
10 s); `alg=none` and algorithms foreign to the key's type are refused; `exp` and `iat` are required,
with `--sasl-oauthbearer-clock-skew-seconds` of leeway; `aud` and `iss` are checked when configured;
the principal is the configured claim (`sub`), which must be a non-empty string; the scope claim, if
any, must hold non-blank, distinct scopes. As Kafka, a token
that does not validate is answered with the challenge `{"status":"invalid_token"}`; the client's
`%x01` reply then fails the exchange with that text. The session may last until the token's `exp`
(the credential lifetime KIP-368 uses).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Protocol

import jwt

from kcoord.broker.security.sasl import SaslFailure

__all__ = ["AccessTokenValidator", "InvalidToken", "JwksKeys", "OAuthBearerServer", "TokenValidator"]

log = logging.getLogger("kcoord.oauth")

# OAuthBearerClientInitialResponse: gs2 header, %x01, key=value pairs each ended by %x01, a final %x01.
_RESPONSE = re.compile(rb"n,(a=(?P<authzid>[^,]*))?,\x01(?P<kvpairs>([^\x01]*\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_ALGORITHMS = {
    "RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
    "EC": ("ES256", "ES384", "ES512"),
    "OKP": ("EdDSA",),
}
_EARLY_REFRESH_S = 10.0


class InvalidToken(ValueError):
    """A token that does not validate, with the challenge's `status` and `scope`: the validator
    callback's error() (`insufficient_scope` and the required scope when only the scope fell short)."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.scope = scope


def error_challenge(exc: ValueError) -> bytes:
    """OAuthBearerSaslServer.jsonErrorResponse, byte for byte (its `, "scope"` has a space)."""
    if not isinstance(exc, InvalidToken):
        return b'{"status":"invalid_token"}'
    text = f'{{"status":"{exc.status}"'
    if exc.scope is not None:
        text += f', "scope":"{exc.scope}"'
    return (text + "}").encode()


class AccessTokenValidator(Protocol):
    """What OAuthBearerServer asks of a validator: (principal, exp in epoch ms), or a ValueError
    (an InvalidToken to choose the challenge's status)."""

    def validate(self, token: str) -> tuple[str, int]: ...


class JwksKeys:
    """The verification keys of a JWKS URL; `refresh()` runs in a worker thread."""

    def __init__(self, url: str, refresh_ms: int) -> None:
        self.url = url
        self.refresh_s = refresh_ms / 1000
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._lock = threading.Lock()
        self._last_refresh = 0.0
        self._refreshing = False

    def _fetch(self) -> bytes:
        if self.url.startswith("file:"):
            return Path(self.url.removeprefix("file://").removeprefix("file:")).read_bytes()
        with urllib.request.urlopen(self.url, timeout=10) as response:
            return bytes(response.read())

    def refresh(self) -> None:
        """Load the key set (blocking: call from a thread, or once at startup)."""
        try:
            keys = jwt.PyJWKSet.from_json(self._fetch().decode()).keys
        except (OSError, ValueError, jwt.PyJWKSetError) as exc:
            log.error("JWKS refresh from %s failed, keeping %d keys: %s", self.url, len(self._keys), exc)
            return
        finally:
            self._last_refresh = time.monotonic()
            self._refreshing = False
        with self._lock:
            self._keys = {key.key_id: key for key in keys}
        log.info("JWKS: %d keys from %s", len(keys), self.url)

    def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        with self._lock:
            keys = self._keys
        if kid is None and len(keys) == 1:
            return next(iter(keys.values()))
        found = keys.get(kid)
        if (
            found is None
            and time.monotonic() - self._last_refresh > _EARLY_REFRESH_S
            and not self._refreshing
        ):
            self._refreshing = True  # an unknown kid: the issuer may have rotated its keys
            threading.Thread(target=self.refresh, name="jwks-refresh", daemon=True).start()
        return found


class TokenValidator:
    """ValidatorAccessTokenValidator's checks; `validate` returns (principal, exp in epoch ms)."""

    def __init__(
        self,
        keys: JwksKeys,
        audience: tuple[str, ...] = (),
        issuer: str | None = None,
        sub_claim: str = "sub",
        clock_skew_s: int = 30,
        scope_claim: str = "scope",
    ) -> None:
        self.scope_claim = scope_claim
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
        self.sub_claim = sub_claim
        self.clock_skew_s = clock_skew_s

    def validate(self, token: str) -> tuple[str, int]:
        """ValueError (any invalid token: signature, alg, exp, iat, aud, iss, the principal claim)."""
        try:
            header = jwt.get_unverified_header(token)
            key = self.keys.key_for(header.get("kid"))
            if key is None:
                raise ValueError("no JWKS key for this token")
            algorithm = str(header.get("alg", ""))
            if algorithm not in _ALGORITHMS.get(str(key.key_type), ()):
                raise ValueError(f"algorithm {algorithm!r} not allowed for a {key.key_type} key")
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                audience=list(self.audience) or None,
                issuer=self.issuer,
                leeway=self.clock_skew_s,
                options={"require": ["exp", "iat"], "verify_aud": bool(self.audience)},
            )
        except jwt.PyJWTError as exc:
            raise ValueError(f"Could not validate the access token: {exc}") from None
        _check_scopes(self.scope_claim, claims.get(self.scope_claim))
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise ValueError(f"the {self.sub_claim} claim is missing or empty")
        return principal.strip(), int(float(claims["exp"]) * 1000)


def _check_scopes(name: str, raw: object) -> None:
    """ClaimValidationUtils.validateScopes: a string or a list of them, each non-blank, no repeats
    (anything else, as Kafka, counts as no scopes)."""
    scopes = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    trimmed = [scope.strip() if isinstance(scope, str) else "" for scope in scopes]
    if any(not scope for scope in trimmed):
        raise ValueError(f"the {name} claim holds an empty or non-string scope")
    if len(set(trimmed)) != len(trimmed):
        raise ValueError(f"the {name} claim holds duplicate scopes")


class OAuthBearerServer:
    """One OAUTHBEARER exchange (OAuthBearerSaslServer)."""

    mechanism = "OAUTHBEARER"

    def __init__(self, validator: AccessTokenValidator) -> None:
        self._validator = validator
        self.complete = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None
        self._error: bytes | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(self._error.decode())  # the client acknowledged our error challenge
        self._error = None
        match = _RESPONSE.fullmatch(token)
        if match is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message", generic=True)
        pairs = dict(pair.split(b"=", 1) for pair in match.group("kvpairs").split(b"\x01") if b"=" in pair)
        auth = _AUTH.fullmatch(pairs.get(b"auth", b"").decode("utf-8", errors="replace"))
        if auth is None or auth.group("scheme").lower() != "bearer":
            raise SaslFailure("Invalid OAUTHBEARER client first message", generic=True)
        try:
            principal, expiry_ms = self._validator.validate(auth.group("token"))
        except ValueError as exc:
            log.debug("OAUTHBEARER token refused: %s", exc)
            self._error = error_challenge(exc)
            return self._error
        authzid = (match.group("authzid") or b"").decode("utf-8", errors="replace")
        if authzid and authzid != principal:
            raise SaslFailure(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different "
                f"from the token's principal name ({principal})"
            )
        self.complete = True
        self.authorization_id = principal
        self.credential_expiry_ms = expiry_ms
        return b""
