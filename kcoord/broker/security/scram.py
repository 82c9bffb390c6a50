"""SCRAM-SHA-256 and SCRAM-SHA-512 as Kafka serves them (RFC 5802/7677; Kafka's ScramSaslServer,
ScramFormatter, ScramMessages), the exchange itself run by `scramp`.

Kafka's differences from a generic SCRAM server, kept here: no SASLprep of the user name (only the
`=2C`/`=3D` escapes are undone) and the credential looked up by that exact name; client-first
extensions: only `tokenauth` is known, and since kcoord has no delegation tokens any extension fails
the exchange; an authorization id other than the user name fails it with Kafka's message (the others
get Kafka's generic one); a stored credential below 4096 iterations is refused. scramp SASLpreps the
name it parses: it is handed a credential already chosen by the raw name, so that cannot change who
authenticates. The credentials, and how they are derived, are the coordinator's
(`kcoord/coordinator/metadata/scram_formatter.py`); nothing here ever holds a password.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from scramp import ScramException, ScramMechanism

from kcoord.broker.security.sasl import SaslFailure
from kcoord.coordinator.metadata.scram_formatter import MIN_ITERATIONS, ScramCredential

__all__ = ["CredentialLookup", "ScramServer"]

# ScramMessages.ClientFirstMessage: gs2 header without channel binding, then n= and r=, extensions.
_CLIENT_FIRST = re.compile(r"n,(a=(?P<authzid>[^,]*))?,n=(?P<saslname>[^,]*),r=(?P<nonce>[^,]*)(?P<ext>.*)")


def _username(saslname: str) -> str:
    """ScramFormatter.username: undo the RFC 5802 escapes, nothing more."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


CredentialLookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential


class ScramServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    credential_expiry_ms: int | None = None

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server: object | None = None
        self.complete = False
        self.authorization_id = ""
        self._username = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("SCRAM message is not UTF-8", generic=True) from None
        if self.complete:
            raise SaslFailure("Unexpected challenge in Sasl server state COMPLETE", generic=True)
        return self._client_final(text) if self._server is not None else self._client_first(text)

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslFailure("Invalid SCRAM client first message", generic=True)
        if match.group("ext"):
            # Only `tokenauth` is known to Kafka, and it means a delegation token: none exist here.
            raise SaslFailure("SCRAM extensions are not supported", generic=True)
        username = _username(match.group("saslname"))
        credential = self._lookup(username, self.mechanism)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials", generic=True)
        authzid = match.group("authzid")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum", generic=True)
        found = (credential.salt, credential.stored_key, credential.server_key, credential.iterations)
        server = ScramMechanism(self.mechanism).make_server(lambda _name: found)
        try:
            server.set_client_first(text)
            first: str = server.get_server_first()
        except ScramException as exc:
            raise SaslFailure(f"SCRAM client first message refused: {exc}", generic=True) from None
        self._server, self._username = server, username
        return first.encode()

    def _client_final(self, text: str) -> bytes:
        server = self._server
        try:
            server.set_client_final(text)  # type: ignore[union-attr]  # the proof, compared in constant time
            final: str = server.get_server_final()  # type: ignore[union-attr]
        except ScramException:
            raise SaslFailure("Authentication failed: Invalid client final message", generic=True) from None
        self.complete = True
        self.authorization_id = self._username
        return final.encode()
