"""SCRAM credentials: kept in the coordinator log (storage record type 9), managed with
DescribeUserScramCredentials / AlterUserScramCredentials (KIP-554) as Kafka's ScramControlManager and
ScramImage.describe do.

Record: key = INT16 version 0 + (name STRING, mechanism INT8), value = INT16 version 0 + (salt,
stored_key, server_key BYTES, iterations INT32), Kafka's UserScramCredentialRecord fields; a deletion
is the key's tombstone (RemoveUserScramCredentialRecord). Replay rebuilds the table; a change is
written through the metadata tenant's runtime (`CoordinatorRuntime.run`) and applied by the same
`apply` replay uses, so it is visible (and answered) only once durable.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.coordinator.metadata.scram_formatter import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    ScramCredential,
    derive_credential,
    salted_password,
)
from kcoord.coordinator.runtime import CoordinatorRuntime, RecordLog, Write
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.messages.records import decode_exact, encode_versioned
from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import BYTES, INT8, INT32, STRING

__all__ = [
    "SCRAM_CREDENTIAL_RECORD_TYPE",
    "CredentialLog",
    "CredentialRecord",
    "ScramCredentialRecord",
    "ScramCredentialTombstone",
    "ScramCredentials",
    "decode_credential",
    "encode_credential",
    "render_credential",
]

log = logging.getLogger("kcoord.credentials")

SCRAM_CREDENTIAL_RECORD_TYPE = 9
SCRAM_CREDENTIAL_KEY = Schema(
    "ScramCredentialKey", versions=range(0, 1), fields=(Field("name", STRING), Field("mechanism", INT8))
)
SCRAM_CREDENTIAL_VALUE = Schema(
    "ScramCredentialValue",
    versions=range(0, 1),
    fields=(
        Field("salt", BYTES),
        Field("stored_key", BYTES),
        Field("server_key", BYTES),
        Field("iterations", INT32),
    ),
)
_DUPLICATE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True, slots=True)
class ScramCredentialRecord:
    name: str
    mechanism: int  # 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
    credential: ScramCredential


@dataclass(frozen=True, slots=True)
class ScramCredentialTombstone:
    name: str
    mechanism: int


CredentialRecord = ScramCredentialRecord | ScramCredentialTombstone


def encode_credential(record: CredentialRecord) -> tuple[bytes, bytes | None]:
    key = encode_versioned(SCRAM_CREDENTIAL_KEY, 0, {"name": record.name, "mechanism": record.mechanism})
    if isinstance(record, ScramCredentialTombstone):
        return key, None
    c = record.credential
    value = {
        "salt": c.salt,
        "stored_key": c.stored_key,
        "server_key": c.server_key,
        "iterations": c.iterations,
    }
    return key, encode_versioned(SCRAM_CREDENTIAL_VALUE, 0, value)


def decode_credential(key: bytes, value: bytes | None) -> CredentialRecord:
    k = decode_exact(SCRAM_CREDENTIAL_KEY, key)
    if value is None:
        return ScramCredentialTombstone(k["name"], k["mechanism"])
    v = decode_exact(SCRAM_CREDENTIAL_VALUE, value)
    credential = ScramCredential(
        bytes(v["salt"]), bytes(v["stored_key"]), bytes(v["server_key"]), v["iterations"]
    )
    return ScramCredentialRecord(k["name"], k["mechanism"], credential)


def render_credential(record: CredentialRecord) -> str:
    """`kcoord storage dump`'s line: never the salt or the keys."""
    what = f"scram_credential user={record.name} mechanism={record.mechanism}"
    if isinstance(record, ScramCredentialTombstone):
        return f"{what} tombstone"
    return f"{what} iterations={record.credential.iterations}"


OnDone = Callable[[BaseException | None], None]
Result = dict[str, Any]


CredentialLog = RecordLog[CredentialRecord]


class ScramCredentials:
    """The credential table: (user, mechanism type) -> credential."""

    def __init__(self, record_log: CredentialLog) -> None:
        self.runtime: CoordinatorRuntime[CredentialRecord] = CoordinatorRuntime(record_log)
        self.runtime.apply = self.apply
        self._table: dict[tuple[str, int], ScramCredential] = {}

    def apply(self, record: CredentialRecord) -> None:
        """Replay, and each durable change (the runtime's apply)."""
        if isinstance(record, ScramCredentialTombstone):
            self._table.pop((record.name, record.mechanism), None)
        else:
            self._table[record.name, record.mechanism] = record.credential

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        """The SCRAM server's credential callback (mechanism by name)."""
        code = MECHANISM_TYPES.get(mechanism)
        return None if code is None else self._table.get((user, code))

    def __len__(self) -> int:
        return len(self._table)

    def describe(self, users: Sequence[str] | None) -> list[Result]:
        """ScramImage.describe: every user when none are named; a name given twice is
        DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND."""
        if not users:
            counts = dict.fromkeys(sorted({name for name, _ in self._table}), 1)
        else:
            counts = {}
            for user in users:
                counts[user] = counts.get(user, 0) + 1
        results: list[Result] = []
        for user, count in counts.items():
            result: Result = {"user": user, "credential_infos": []}
            infos = [
                {"mechanism": code, "iterations": self._table[user, code].iterations}
                for code in sorted(MECHANISM_NAMES)
                if (user, code) in self._table
            ]
            if count > 1:
                result.update(
                    error_code=ErrorCode.DUPLICATE_RESOURCE,
                    error_message=f"Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            elif not infos:
                result.update(
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message=f"Attempt to describe a user credential that does not exist: {user}",
                )
            else:
                result["credential_infos"] = infos
            results.append(result)
        return results

    def alter(
        self, deletions: Sequence[Result], upsertions: Sequence[Result], done: Callable[[list[Result]], None]
    ) -> None:
        """ScramControlManager.alterCredentials: validate per user, write the records of the valid
        changes, answer once durable (a failed write fails those users)."""
        accepted: dict[str, tuple[Result, CredentialRecord]] = {}
        errors: dict[str, tuple[int, str]] = {}
        for item, deleting in [(d, True) for d in deletions] + [(u, False) for u in upsertions]:
            name = str(item["name"])
            if name in errors:
                continue
            if accepted.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _DUPLICATE)
                continue
            error = self._validate(item, deleting)
            if error is not None:
                errors[name] = error
            else:
                accepted[name] = (item, _record(item, deleting))
        results = [{"user": name, "error_code": 0, "error_message": None} for name in accepted]
        results += [
            {"user": name, "error_code": code, "error_message": text} for name, (code, text) in errors.items()
        ]
        records = [record for _, record in accepted.values()]
        if not records:
            done(results)
            return

        def answer(error: BaseException | None) -> None:
            if error is not None:
                log.error("SCRAM credential write failed: %s", error)
                for result in results[: len(records)]:
                    result.update(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(error))
            done(results)

        self.runtime.run(Write(records, answer))

    def bootstrap(
        self, users: dict[str, bytes], iterations: int, done: Callable[[list[Result]], None]
    ) -> None:
        """Credentials for users that have none yet (both mechanisms), from passwords: a random salt
        per credential, no SASLprep (Kafka's ScramFormatter). Existing ones are kept."""
        upsertions = []
        for name, password in users.items():
            if any((name, code) in self._table for code in MECHANISM_NAMES):
                continue
            for code, mechanism in MECHANISM_NAMES.items():
                salt = secrets.token_bytes(16)
                salted = salted_password(mechanism, password.decode(), salt, iterations)
                upsertions.append(
                    {
                        "name": name,
                        "mechanism": code,
                        "iterations": iterations,
                        "salt": salt,
                        "salted_password": salted,
                    }
                )
        records = [_record(item, False) for item in upsertions]
        if not records:
            done([])
            return

        def answer(error: BaseException | None) -> None:
            done([{"user": item["name"], "error": error} for item in upsertions])

        self.runtime.run(Write(records, answer))

    def _validate(self, item: Result, deleting: bool) -> tuple[int, str] | None:
        name, mechanism = str(item["name"]), int(item["mechanism"])
        if not name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if mechanism not in MECHANISM_NAMES:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if deleting:
            if (name, mechanism) not in self._table:
                return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            return None
        if int(item["iterations"]) < MIN_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if int(item["iterations"]) > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        return None


def _record(item: Result, deleting: bool) -> CredentialRecord:
    name, mechanism = str(item["name"]), int(item["mechanism"])
    if deleting:
        return ScramCredentialTombstone(name, mechanism)
    credential = derive_credential(
        MECHANISM_NAMES[mechanism],
        bytes(item["salt"]),
        bytes(item["salted_password"]),
        int(item["iterations"]),
    )
    return ScramCredentialRecord(name, mechanism, credential)
