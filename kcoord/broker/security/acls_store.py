"""ACLs kept durable: CreateAcls / DeleteAcls write records to the coordinator log (storage record
type 10, `kcoord/protocol/messages/records.py` AclKey / AclValue) and change the authorizer only once they
are durable; replay feeds the same `apply` (as the producer id block and the topic registry do).

Kafka keeps ACLs in the metadata log (AccessControlEntryRecord / RemoveAccessControlEntryRecord,
AclControlManager); here the key is the binding itself, so compaction keeps exactly the live ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kcoord.broker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    creation_error,
    filter_error,
)
from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages.records import (
    ACL_KEY,
    ACL_RECORD_TYPE,
    ACL_VALUE,
    decode_exact,
    encode_versioned,
)

__all__ = [
    "ACL_RECORD_TYPE",
    "AclRecord",
    "AclStore",
    "AclTombstone",
    "CreateResult",
    "DeleteResult",
    "acl_from_storage",
    "encode_acl_key",
    "encode_acl_value",
]

log = logging.getLogger("kcoord.acls")

_VERSION = 0
OnDone = Callable[[BaseException | None], None]


@dataclass(frozen=True, slots=True)
class AclRecord:
    binding: AclBinding


@dataclass(frozen=True, slots=True)
class AclTombstone:
    binding: AclBinding


class AclLog(Protocol):
    def append(self, records: Sequence[AclRecord | AclTombstone], on_done: OnDone) -> None: ...


def encode_acl_key(binding: AclBinding) -> bytes:
    fields = {
        "resource_type": int(binding.resource_type),
        "resource_name": binding.resource_name,
        "pattern_type": int(binding.pattern_type),
        "principal": binding.principal,
        "host": binding.host,
        "operation": int(binding.operation),
        "permission_type": int(binding.permission_type),
    }
    return encode_versioned(ACL_KEY, _VERSION, fields)


def encode_acl_value() -> bytes:
    return encode_versioned(ACL_VALUE, _VERSION, {})


def acl_from_storage(key: bytes, value: bytes | None) -> AclRecord | AclTombstone:
    try:
        k = decode_exact(ACL_KEY, key)
        if value is not None:
            decode_exact(ACL_VALUE, value)
    except DecodeError as exc:
        raise ValueError(f"bad ACL record ({len(key)} key bytes): {exc}") from None
    binding = AclBinding(
        ResourceType.of(k["resource_type"]),
        k["resource_name"],
        PatternType.of(k["pattern_type"]),
        k["principal"],
        k["host"],
        AclOperation.of(k["operation"]),
        AclPermissionType.of(k["permission_type"]),
    )
    return AclTombstone(binding) if value is None else AclRecord(binding)


# (error message or None) per creation; (error message or None, deleted bindings) per filter.
CreateResult = list[str | None]
DeleteResult = list[tuple[str | None, list[AclBinding]]]


class AclStore:
    """The authorizer's ACLs and the log that keeps them; changes are durable before they apply."""

    def __init__(self, authorizer: StandardAuthorizer, acl_log: AclLog) -> None:
        self.authorizer = authorizer
        self._log = acl_log

    def apply(self, record: AclRecord | AclTombstone) -> None:
        """Replay, and each durable change."""
        if isinstance(record, AclRecord):
            self.authorizer.add(record.binding)
        else:
            self.authorizer.remove(record.binding)

    def create(self, bindings: Sequence[AclBinding], done: Callable[[CreateResult], None]) -> None:
        """AclControlManager.createAcls: each valid new binding is written; errors are per binding."""
        errors: CreateResult = [creation_error(binding) for binding in bindings]
        fresh: dict[AclBinding, None] = {}
        existing = set(self.authorizer.acls())
        for binding, error in zip(bindings, errors, strict=True):
            if error is None and binding not in existing:
                fresh[binding] = None
        records = [AclRecord(binding) for binding in fresh]

        def durable(failure: BaseException | None) -> None:
            if failure is not None:
                log.error("ACL write failed: %s", failure)
                done([error or f"Unknown error while trying to create ACL: {failure}" for error in errors])
                return
            for record in records:
                self.apply(record)
            log.info("acls created=%d total=%d", len(records), len(self.authorizer))
            done(errors)

        self._write(records, durable)

    def delete(self, filters: Sequence[AclBindingFilter], done: Callable[[DeleteResult], None]) -> None:
        """AclControlManager.deleteAcls: every binding a valid filter matches is removed."""
        results: DeleteResult = []
        doomed: dict[AclBinding, None] = {}
        bindings = self.authorizer.acls()
        for acl_filter in filters:
            error = filter_error(acl_filter)
            matched = [] if error is not None else [b for b in bindings if acl_filter.matches(b)]
            doomed.update(dict.fromkeys(matched))
            results.append((error, matched))
        records = [AclTombstone(binding) for binding in doomed]

        def durable(failure: BaseException | None) -> None:
            if failure is not None:
                log.error("ACL delete failed: %s", failure)
                done([(error or f"Unknown error: {failure}", []) for error, _ in results])
                return
            for record in records:
                self.apply(record)
            log.info("acls deleted=%d total=%d", len(records), len(self.authorizer))
            done(results)

        self._write(records, durable)

    def _write(self, records: Sequence[AclRecord | AclTombstone], durable: OnDone) -> None:
        if records:
            self._log.append(records, durable)
        else:
            durable(None)
