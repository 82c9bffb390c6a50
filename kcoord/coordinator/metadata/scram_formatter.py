"""The credential half of SCRAM (Kafka's ScramFormatter and ScramCredential): what the credential
store derives and keeps, and the limits ScramControlManager checks. The exchange itself (the SASL
server) is the edge's, in `kcoord/broker/security/scram.py`, which takes its credentials from here.

Stored keys are derived from the salted password the client sends (KIP-554), as
ScramControlManager.finishUpsertion does; nothing here ever holds a password.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISM_NAMES",
    "MECHANISM_TYPES",
    "MIN_ITERATIONS",
    "ScramCredential",
    "derive_credential",
    "salted_password",
]

MIN_ITERATIONS = 4096  # ScramMechanism.minIterations (both mechanisms)
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS
# org.apache.kafka.clients.admin.ScramMechanism: the type byte of the admin APIs and records.
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {code: name for name, code in MECHANISM_TYPES.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server keeps per user and mechanism (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def derive_credential(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    """StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = _HASHES[mechanism]
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    return ScramCredential(salt, stored_key, hmac.digest(salted, b"Server Key", digest), iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) without SASLprep (Kafka's ScramFormatter.saltedPassword): for tests and tools."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode(), salt, iterations)
