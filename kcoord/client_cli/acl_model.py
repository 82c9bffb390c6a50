"""ACL values as Kafka's admin client sees them: the enums' wire codes and names (ResourceType,
PatternType, AclOperation, AclPermissionType in clients/.../common/{resource,acl}/), the operations each
resource type supports (AclEntry.supportedOperations), and the bindings with Kafka's toString, which
kafka-acls.sh prints (ResourcePattern.toString, AccessControlEntryData.toString)."""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD_HOST",
    "AclOperation",
    "AclPermissionType",
    "Entry",
    "PatternType",
    "Resource",
    "ResourceType",
    "operation_from_name",
    "pascal_case",
]

CLUSTER_NAME = "kafka-cluster"  # Resource.CLUSTER_NAME
WILDCARD_HOST = "*"  # AclEntry.WILDCARD_HOST


_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            _O.READ,
            _O.WRITE,
            _O.CREATE,
            _O.DESCRIBE,
            _O.DELETE,
            _O.ALTER,
            _O.DESCRIBE_CONFIGS,
            _O.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.CLUSTER: frozenset(
        {
            _O.CREATE,
            _O.CLUSTER_ACTION,
            _O.DESCRIBE_CONFIGS,
            _O.ALTER_CONFIGS,
            _O.IDEMPOTENT_WRITE,
            _O.ALTER,
            _O.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}


def pascal_case(name: str) -> str:
    """SecurityUtils.toPascalCase: DESCRIBE_CONFIGS -> DescribeConfigs."""
    return "".join(part.capitalize() for part in name.split("_"))


def operation_from_name(name: str) -> AclOperation:
    """SecurityUtils.operation: the Pascal-case name (`DescribeConfigs`) or it upper-cased
    (`DESCRIBECONFIGS`); UNKNOWN otherwise."""
    for operation in AclOperation:
        pascal = pascal_case(operation.name)
        if name in (pascal, pascal.upper()) or name.upper() == pascal.upper():
            return operation
    return AclOperation.UNKNOWN


@dataclass(frozen=True, slots=True, order=True)
class Resource:
    """A ResourcePattern, or a ResourcePatternFilter when name is None or the pattern is ANY/MATCH."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, " + (
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True, order=True)
class Entry:
    """An AccessControlEntry: who, from where, may or may not do what."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )
