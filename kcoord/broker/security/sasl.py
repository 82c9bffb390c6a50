"""SASL mechanisms on the server side, as Kafka's SaslServer implementations behave, and PLAIN.

A `MechanismServer` is one authentication exchange: `evaluate(token)` takes the client's token and
returns the server's (b"" when there is none), raising `SaslFailure` to end it. `SaslFailure.message`
is what the client is told: Kafka passes a SaslAuthenticationException's message through and replaces
any other SaslException's with a generic one (SaslServerAuthenticator.handleSaslToken), so a
mechanism marks which kind it raised with `generic`.

PLAIN (RFC 4616, Kafka's PlainSaslServer): `[authzid] NUL authcid NUL passwd`, exactly three tokens;
the password compared in constant time, an unknown user compared against a dummy so both take as long.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

__all__ = [
    "MechanismServer",
    "PlainServer",
    "SaslFailure",
    "generic_failure_message",
    "load_plain_users",
    "parse_plain_users",
]


class SaslFailure(Exception):
    """The exchange failed. `generic`: the client gets Kafka's generic message, not this one."""

    def __init__(self, message: str, *, generic: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.generic = generic


def generic_failure_message(mechanism: str, reauthenticating: bool) -> str:
    """SaslServerAuthenticator's answer to a SaslException: says nothing about the user."""
    what = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


class MechanismServer(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str  # valid once complete
    credential_expiry_ms: int | None  # epoch ms the credential expires (OAUTHBEARER's exp), else None

    def evaluate(self, token: bytes) -> bytes: ...


class PlainServer:
    """One PLAIN exchange against a fixed user table (user -> password bytes)."""

    mechanism = "PLAIN"
    credential_expiry_ms: int | None = None

    def __init__(self, users: Mapping[str, bytes]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN exchange already complete", generic=True)
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self._users.get(username)
        matches = hmac.compare_digest(password.encode(), expected if expected is not None else _DUMMY)
        if expected is None or not matches:
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""


_DUMMY = b"\0" * 32


def parse_plain_users(text: str, *, lines_only: bool = False) -> dict[str, bytes]:
    """`user=password` entries separated by commas or new lines (a file: new lines only, so a
    password may hold a comma; it may always hold `=`)."""
    users: dict[str, bytes] = {}
    for line in (text if lines_only else text.replace(",", "\n")).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition("=")
        if not sep or not user.strip():
            raise ValueError("expected user=password entries")
        users[user.strip()] = password.encode()
    return users


def load_plain_users(inline: str | None, path: Path | None) -> dict[str, bytes]:
    """The PLAIN users of `--sasl-plain-users` and `--sasl-plain-users-file` (the file's lines win)."""
    users = parse_plain_users(inline) if inline else {}
    if path is not None:
        users.update(parse_plain_users(path.read_text(), lines_only=True))
    return users
