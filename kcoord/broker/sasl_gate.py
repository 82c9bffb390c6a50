"""The SASL exchange in front of a SASL listener's connection: Kafka's SaslServerAuthenticator.

Before authentication completes only ApiVersions (once, first) and SaslHandshake are read; any other
request closes the connection without an answer. SaslHandshake v1 means the tokens come wrapped in
SaslAuthenticate, where any other request is answered ILLEGAL_SASL_STATE (when its response has a
top-level error code: Kafka's getErrorResponse) and the connection closed; v0 means raw size-prefixed
tokens. An unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, a failed
exchange SASL_AUTHENTICATION_FAILED; both after `connection.failed.authentication.delay.ms`, then the
connection closes (Selector's delayed close). The gate never touches the request hot path: an
authenticated connection drops it, unless its session expires (KIP-368), in which case only a
SaslHandshake (re-authentication, same mechanism and principal, at most once a second) or closing
happens past the expiry.
"""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from kcoord.broker.apis import api_versions
from kcoord.broker.security.principal import KafkaPrincipal
from kcoord.broker.security.sasl import MechanismServer, SaslFailure, generic_failure_message
from kcoord.protocol.errors import DecodeError, ErrorCode, UnsupportedVersion
from kcoord.protocol.frames import decode_request, encode_response
from kcoord.protocol.messages import RESPONSE_SCHEMAS

__all__ = ["COMPLETE", "SASL_AUTHENTICATE", "SASL_HANDSHAKE", "Outcome", "SaslGate", "SaslSetup"]

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
_HEAD = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")  # ApiVersions' first body field; its response header is always v0
_MIN_REAUTH_INTERVAL_S = 1.0  # KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS

# SaslServerAuthenticator.SaslState, the ones a server passes through.
HANDSHAKE_OR_VERSIONS, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED, REAUTH_BAD_MECHANISM = range(6)


@dataclass(frozen=True, slots=True)
class SaslSetup:
    """What every SASL connection of a listener shares."""

    mechanisms: tuple[str, ...]  # sasl.enabled.mechanisms, in the order the handshake lists them
    new_server: Callable[[str], MechanismServer]
    connections_max_reauth_ms: int
    # (mechanism, result) -> count: /metrics authentications by mechanism and result
    counts: Counter[tuple[str, str]]
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)


@dataclass(slots=True)
class Outcome:
    """What the connection does with one frame the gate took."""

    frame: bytes | None = None  # a response frame to send now
    failed: bool = False  # close after the failure delay...
    failure_frame: bytes | None = None  # ...having sent this (None: close without an answer)
    authenticated: bool = False  # complete: the principal is set; drop the gate or keep it for expiry
    immediate: bool = False  # failed on malformed input: close without the delay


class SaslGate:
    """One connection's SASL state: the connection hands it every frame until authentication completes
    (and, while the session can expire, checks `expired` and `begin_reauthentication` per request)."""

    def __init__(self, setup: SaslSetup, api_versions_frame: Callable[[int, int, bytes], bytes]) -> None:
        self._setup = setup
        self._api_versions_frame = api_versions_frame
        self.state = HANDSHAKE_OR_VERSIONS
        self._kafka_headers = False  # SaslHandshake v1: tokens come wrapped in SaslAuthenticate
        self._server: MechanismServer | None = None
        self.mechanism = ""
        self.principal: KafkaPrincipal | None = None
        self.expires_at: float | None = None  # monotonic seconds; None = the session never expires
        self._supports_reauth = False  # the client used SaslAuthenticate v1+
        self._previous: tuple[str, KafkaPrincipal] | None = None  # re-authenticating from these
        self._last_reauth = 0.0
        self._bad_mechanism = ""
        self.failure_reason = ""

    # -- after authentication: what the connection asks per request while the gate is attached --
    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def begin_reauthentication(self, now: float) -> bool:
        """A SaslHandshake on an authenticated connection: re-authenticate (KafkaChannel's
        maybeBeginServerReauthentication) or False to let the normal handler answer it."""
        if self.expires_at is None or not self._supports_reauth or self.principal is None:
            return False
        if self._last_reauth and now - self._last_reauth < _MIN_REAUTH_INTERVAL_S:
            return False
        self._last_reauth = now
        self._previous = (self.mechanism, self.principal)
        self.state = HANDSHAKE
        self._server = None
        return True

    # -- the exchange --------------------------------------------------------------------------
    def receive(self, payload: bytes) -> Outcome:
        if self.state == FAILED:  # frames that came with the failing one: the connection is closing
            return Outcome()
        try:
            if self.state == AUTHENTICATE:
                return self._token(payload) if self._kafka_headers else self._raw_token(payload)
            if self.state == REAUTH_BAD_MECHANISM:
                return self._fail(None, self._bad_mechanism)
            return self._kafka_request(payload)
        except (DecodeError, UnsupportedVersion, UnicodeDecodeError) as exc:
            # Malformed: Kafka closes at once (not an AuthenticationException, so no delay).
            outcome = self._fail(None, f"undecodable request during SASL authentication: {exc}")
            outcome.immediate = True
            return outcome

    def _kafka_request(self, payload: bytes) -> Outcome:
        if len(payload) < _HEAD.size:
            raise DecodeError(None, None, "request header", "shorter than 8 bytes")
        api_key, api_version, correlation_id = _HEAD.unpack_from(payload)
        if api_key == api_versions.API_KEY and self.state == HANDSHAKE_OR_VERSIONS:
            frame = self._api_versions_frame(api_version, correlation_id, payload)
            # handleApiVersionsRequest: an UNSUPPORTED_VERSION or INVALID_REQUEST answer leaves the state
            # as it was, so the client may retry at another version; only a served one moves on.
            if _ERROR_CODE.unpack_from(frame, 8)[0] == ErrorCode.NONE:
                self.state = HANDSHAKE
            return Outcome(frame=frame)
        if api_key != SASL_HANDSHAKE:
            # Kafka: IllegalSaslStateException "Unexpected Kafka request ... during SASL handshake",
            # no answer (ApiVersions twice is an IllegalStateException: the same close).
            return self._fail(None, f"unexpected api_key={api_key} before SASL authentication")
        _, body = decode_request(payload)
        mechanism = str(body["mechanism"])
        self._kafka_headers = api_version >= 1
        response = {"error_code": ErrorCode.NONE, "mechanisms": list(self._setup.mechanisms)}
        if mechanism not in self._setup.mechanisms:
            failure = encode_response(
                SASL_HANDSHAKE,
                api_version,
                correlation_id,
                {**response, "error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM},
            )
            return self._fail(failure, f"unsupported SASL mechanism {mechanism!r}")
        frame = encode_response(SASL_HANDSHAKE, api_version, correlation_id, response)
        if self._previous is not None and mechanism != self._previous[0]:
            # REAUTH_BAD_MECHANISM: the handshake is answered; the next token fails the connection.
            self._bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for re-authentication "
                f"of mechanism '{self._previous[0]}'"
            )
            self.state = REAUTH_BAD_MECHANISM
            return Outcome(frame=frame)
        self.mechanism = mechanism
        self._server = self._setup.new_server(mechanism)
        self.state = AUTHENTICATE
        return Outcome(frame=frame)

    def _raw_token(self, payload: bytes) -> Outcome:
        """After a v0 handshake: the token and its answer are bare size-prefixed frames; a failure
        closes without an answer (Kafka builds no failure response on this path)."""
        assert self._server is not None
        try:
            response = self._server.evaluate(payload)
            if self._server.complete:
                self._complete()
        except SaslFailure as failure:
            return self._fail(None, failure.message)
        outcome = Outcome(frame=_SIZE.pack(len(response)) + response)
        outcome.authenticated = self.state == COMPLETE
        return outcome

    def _token(self, payload: bytes) -> Outcome:
        """After a v1 handshake: SaslAuthenticate only; anything else is ILLEGAL_SASL_STATE."""
        assert self._server is not None
        header, body = decode_request(payload)
        api_key, version, correlation_id = header[0], header[1], header[2]
        if api_key != SASL_AUTHENTICATE:
            failure = _error_response(api_key, version, correlation_id, ErrorCode.ILLEGAL_SASL_STATE)
            return self._fail(failure, f"unexpected api_key={api_key} during SASL authentication")
        self._supports_reauth = self._supports_reauth or version > 0
        try:
            response = self._server.evaluate(bytes(body["auth_bytes"]))
            lifetime_ms = self._complete() if self._server.complete else 0
        except SaslFailure as failure:
            message = failure.message
            if failure.generic:
                message = generic_failure_message(self.mechanism, self._previous is not None)
            answer = {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": message}
            return self._fail(encode_response(SASL_AUTHENTICATE, version, correlation_id, answer), message)
        answer = {"error_code": ErrorCode.NONE, "auth_bytes": response, "session_lifetime_ms": lifetime_ms}
        frame = encode_response(SASL_AUTHENTICATE, version, correlation_id, answer)
        return Outcome(frame=frame, authenticated=self.state == COMPLETE)

    def _complete(self) -> int:
        """The exchange succeeded: the principal (unchanged if re-authenticating) and the session's
        lifetime, Kafka's calcCompletionTimesAndReturnSessionLifetimeMs."""
        assert self._server is not None
        principal = KafkaPrincipal("User", self._server.authorization_id)
        if self._previous is not None and self._previous[1] != principal:
            old = self._previous[1]
            raise SaslFailure(
                "Cannot change principals during re-authentication from "
                f"{old.principal_type}.{old.name}: {principal.principal_type}.{principal.name}"
            )
        lifetime_ms = _session_lifetime_ms(
            self._server.credential_expiry_ms, self._setup.connections_max_reauth_ms, self._setup.now_ms()
        )
        self.expires_at = None if lifetime_ms is None else time.monotonic() + lifetime_ms / 1000
        self.principal = principal
        self.state = COMPLETE
        self._previous = None
        self._count("success")
        return lifetime_ms or 0

    def _fail(self, failure_frame: bytes | None, reason: str) -> Outcome:
        self.state = FAILED
        self.failure_reason = reason
        self._count("failure")
        return Outcome(failed=True, failure_frame=failure_frame)

    def _count(self, result: str) -> None:
        self._setup.counts[self.mechanism or "none", result] += 1


def _session_lifetime_ms(credential_expiry_ms: int | None, max_reauth_ms: int, now_ms: int) -> int | None:
    """None: no expiry. Else min(credential expiry - now, connections.max.reauth.ms), at least 0."""
    if credential_expiry_ms is None and max_reauth_ms <= 0:
        return None
    if credential_expiry_ms is None:
        return max_reauth_ms
    remaining = max(credential_expiry_ms - now_ms, 0)
    return remaining if max_reauth_ms <= 0 else min(remaining, max_reauth_ms)


def _error_response(api_key: int, version: int, correlation_id: int, code: int) -> bytes | None:
    """The request's response carrying only a top-level error code, when its schema has one."""
    schema = RESPONSE_SCHEMAS.get(api_key)
    if schema is None or not any(f.name == "error_code" and f.present(version, False) for f in schema.fields):
        return None
    try:
        return encode_response(api_key, version, correlation_id, {"error_code": code})
    except Exception:  # a schema with required fields the default cannot fill: close unanswered
        return None
