"""The client side of SASL PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER, as Kafka's clients do them, and
the exchange over SaslHandshake v1 + SaslAuthenticate (KIP-152) that `kafka_client.Connection` runs
right after ApiVersions (Kafka's SaslClientAuthenticator: SEND_APIVERSIONS_REQUEST, then
SEND_HANDSHAKE_REQUEST, then INTERMEDIATE until complete).

Each mechanism is a small stepper: `initial()` is the first token, `respond(server_token)` the next one,
or None when the exchange is complete on our side.

SCRAM is written here rather than taken from scramp's client: scramp SASLpreps the user name and the
password, Kafka does not (ScramFormatter.normalize is plain UTF-8), and a password that SASLprep changes
would then authenticate with scramp but not with Kafka's own clients (docs/compat.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "MIN_ITERATIONS",
    "SCRAM_HASHES",
    "OAuthBearerClient",
    "PlainClient",
    "SaslError",
    "SaslMechanismClient",
    "ScramClient",
    "authenticate",
    "kafka_nonce",
    "salted_password",
    "scram_sasl_name",
]

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
UNSUPPORTED_SASL_MECHANISM = 33
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # ScramMechanism.minIterations, both mechanisms
_SEPARATOR = "\x01"  # OAuthBearerClientInitialResponse.SEPARATOR


class SaslError(Exception):
    """The exchange failed on the client side (a bad server message, a failed server signature)."""


class SaslMechanismClient(Protocol):
    mechanism: str

    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None: ...


class RequestSender(Protocol):
    """What `authenticate` needs of a connection (kafka_client.Connection)."""

    address: str

    def version(self, api_key: int, newest: int | None = None) -> int: ...

    def request(
        self, api_key: int, body: Mapping[str, Any], version: int | None = None
    ) -> dict[str, Any]: ...


@dataclass
class PlainClient:
    """RFC 4616 as Kafka's PlainSaslServer reads it: authzid (empty), user name, password."""

    username: str
    password: str
    mechanism: str = "PLAIN"

    def initial(self) -> bytes:
        return f"\0{self.username}\0{self.password}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return None


@dataclass
class OAuthBearerClient:
    """RFC 7628's client initial response as OAuthBearerClientInitialResponse.toBytes writes it:
    `n,,\\x01auth=Bearer <token>[\\x01key=value...]\\x01\\x01`. A server that refuses the token sends an
    error challenge (JSON); the client answers it with a lone separator and the server then fails the
    exchange (RFC 7628 3.2.3, OAuthBearerSaslClient)."""

    token: str
    extensions: dict[str, str] = field(default_factory=dict)
    mechanism: str = "OAUTHBEARER"

    def initial(self) -> bytes:
        extra = "".join(f"{_SEPARATOR}{key}={value}" for key, value in sorted(self.extensions.items()))
        return f"n,,{_SEPARATOR}auth=Bearer {self.token}{extra}{_SEPARATOR}{_SEPARATOR}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return _SEPARATOR.encode() if challenge else None


def kafka_nonce() -> str:
    """ScramFormatter.secureRandomString: 130 random bits written in base 36."""
    number, digits = secrets.randbits(130), []
    while number:
        number, digit = divmod(number, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(reversed(digits)) or "0"


def scram_sasl_name(username: str) -> str:
    """ScramFormatter.saslName: `=` and `,` escaped as =3D and =2C."""
    return username.replace("=", "=3D").replace(",", "=2C")


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802, which is PBKDF2 with the HMAC's own output length
    (ScramFormatter.hi); the password's UTF-8 bytes, no SASLprep."""
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password, salt, iterations)


def _attributes(message: bytes) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise SaslError("the server's SCRAM message is not UTF-8") from None
    pairs = (part.split("=", 1) for part in text.split(","))
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


class ScramClient:
    """RFC 5802 / 7677 client, as Kafka's ScramSaslClient: no channel binding (`n,,`), no extensions,
    the server's iteration count checked against the mechanism's minimum, the server signature checked
    in constant time."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        nonce: str | None = None,
        salt_password: Callable[[str, bytes, bytes, int], bytes] | None = None,
    ) -> None:
        """`salt_password` replaces `salted_password` (a load generator caches it: PBKDF2 is the
        client's work, and bench.security measures the server's)."""
        if mechanism not in SCRAM_HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce or kafka_nonce()
        self._first_bare = f"n={scram_sasl_name(username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._salt_password = salt_password or salted_password

    def initial(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(challenge)
        self._verify_server_final(challenge)
        return None

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

    def _client_final(self, server_first: bytes) -> bytes:
        attrs = _attributes(server_first)
        if "e" in attrs:
            raise SaslError(f"the server refused the SCRAM exchange: {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or salt is None or not iterations.isdigit():
            raise SaslError("invalid SCRAM server first message")
        if int(iterations) < MIN_ITERATIONS:
            raise SaslError(
                f"Requested iterations {iterations} is less than the minimum {MIN_ITERATIONS} "
                f"for {self.mechanism}"
            )
        salted = self._salt_password(self.mechanism, self._password, base64.b64decode(salt), int(iterations))
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first.decode()},{without_proof}".encode()
        client_key = self._hmac(salted, b"Client Key")
        signature = self._hmac(hashlib.new(self._hash, client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: bytes) -> None:
        attrs = _attributes(server_final)
        if "e" in attrs:
            raise SaslError(f"the server refused the SCRAM proof: {attrs['e']}")
        expected = self._server_signature or b""
        try:
            got = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            got = b""
        if not hmac.compare_digest(got, expected):
            raise SaslError("invalid server signature in the SCRAM server final message")


def authenticate(conn: RequestSender, client: SaslMechanismClient) -> None:
    """SaslHandshake v1, then SaslAuthenticate until both sides are done; SaslError on any failure
    (the broker closes the connection after a failed authentication)."""
    handshake_version = conn.version(SASL_HANDSHAKE, 1)
    if handshake_version < 1:  # v0 means raw tokens after the handshake: pre-KIP-152 brokers only
        raise SaslError(f"{conn.address} speaks only SaslHandshake v0; these tools need v1")
    handshake = conn.request(SASL_HANDSHAKE, {"mechanism": client.mechanism}, handshake_version)
    if handshake["error_code"] == UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(handshake["mechanisms"]) or "none"
        raise SaslError(
            f"{conn.address} does not enable SASL mechanism {client.mechanism} (enabled: {enabled})"
        )
    if handshake["error_code"] != 0:
        raise SaslError(f"{conn.address} refused SaslHandshake: error {handshake['error_code']}")
    version = conn.version(SASL_AUTHENTICATE)
    token: bytes | None = client.initial()
    while token is not None:
        response = conn.request(SASL_AUTHENTICATE, {"auth_bytes": token}, version)
        if response["error_code"] != 0:
            message = response.get("error_message") or f"error {response['error_code']}"
            raise SaslError(f"authentication with {client.mechanism} failed at {conn.address}: {message}")
        token = client.respond(response["auth_bytes"])
