"""ACLs kept durable: CreateAcls / DeleteAcls write records to the coordinator log (storage record
type 10, `kcoord/protocol/messages/records.py` AclKey / AclValue) through the metadata tenant's runtime
(`CoordinatorRuntime.run`), which changes the binding index (the edge's authorizer) only once they are
durable, through `apply`, the path replay feeds too.

Kafka keeps ACLs in the metadata log (AccessControlEntryRecord / RemoveAccessControlEntryRecord,
AclControlManager); here the key is the binding itself, so compaction keeps exactly the live ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from kcoord.coordinator.metadata.acl_model import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    creation_error,
    filter_error,
)
from kcoord.coordinator.runtime import CoordinatorRuntime, RecordLog, Write
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
    "AclChange",
    "AclIndex",
    "AclLog",
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


AclChange = AclRecord | AclTombstone
AclLog = RecordLog[AclChange]


class AclIndex(Protocol):
    """The bindings an authorizer decides with (the edge's `StandardAuthorizer` satisfies it): the
    store changes it only through `apply`, once a change is durable (Kafka's AclControlManager feeds
    the authorizer from the metadata log the same way, StandardAuthorizer.addAcl / removeAcl)."""

    def add(self, acl: AclBinding) -> bool: ...

    def remove(self, acl: AclBinding) -> bool: ...

    def acls(self) -> list[AclBinding]: ...

    def __len__(self) -> int: ...


IndexT = TypeVar("IndexT", bound=AclIndex, covariant=True)  # the store only reads and feeds it


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


class AclStore(Generic[IndexT]):
    """The ACLs of a binding index and the log that keeps them; changes are durable before they apply."""

    def __init__(self, authorizer: IndexT, acl_log: AclLog) -> None:
        self.authorizer = authorizer
        self.runtime: CoordinatorRuntime[AclChange] = CoordinatorRuntime(acl_log)
        self.runtime.apply = self.apply

    def apply(self, record: AclChange) -> None:
        """Replay, and each durable change (the runtime's apply)."""
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

        def answer(failure: BaseException | None) -> None:
            if failure is not None:
                log.error("ACL write failed: %s", failure)
                done([error or f"Unknown error while trying to create ACL: {failure}" for error in errors])
                return
            log.info("acls created=%d total=%d", len(records), len(self.authorizer))
            done(errors)

        self._write(records, answer)

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

        def answer(failure: BaseException | None) -> None:
            if failure is not None:
                log.error("ACL delete failed: %s", failure)
                done([(error or f"Unknown error: {failure}", []) for error, _ in results])
                return
            log.info("acls deleted=%d total=%d", len(records), len(self.authorizer))
            done(results)

        self._write(records, answer)

    def _write(self, records: Sequence[AclChange], answer: OnDone) -> None:
        """Through the runtime: applied once durable, then answered; nothing to write answers at once."""
        if records:
            self.runtime.run(Write(records, answer))
        else:
            answer(None)
