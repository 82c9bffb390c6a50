"""ACL bindings <-> storage records (type 10, issue 25), and their `kcoord storage dump` line."""

from __future__ import annotations

from kcoord import storage
from kcoord.coordinator.metadata.acl_store import (
    ACL_RECORD_TYPE,
    AclRecord,
    AclTombstone,
    acl_from_storage,
    encode_acl_key,
    encode_acl_value,
)

__all__ = ["ACL_RECORD_TYPE", "acl_record_from_storage", "acl_to_storage", "render_acl"]


def acl_to_storage(record: AclRecord | AclTombstone) -> storage.Record:
    value = encode_acl_value() if isinstance(record, AclRecord) else None
    return storage.Record(ACL_RECORD_TYPE, encode_acl_key(record.binding), value)


def acl_record_from_storage(record: storage.Record) -> AclRecord | AclTombstone:
    return acl_from_storage(record.key, record.value)


def render_acl(record: AclRecord | AclTombstone) -> str:
    b = record.binding
    state = "tombstone" if isinstance(record, AclTombstone) else "present"
    return (
        f"acl resource_type={b.resource_type.name} resource_name={b.resource_name!r} "
        f"pattern_type={b.pattern_type.name} principal={b.principal} host={b.host} "
        f"operation={b.operation.name} permission_type={b.permission_type.name} {state}"
    )
