"""ACL bindings and binding filters: Kafka's AclBinding / AclBindingFilter as values (pure).

Codes are Kafka's (org.apache.kafka.common.acl.AclOperation / AclPermissionType,
common.resource.ResourceType / PatternType); a code Kafka does not know is UNKNOWN, as their
`fromCode` does. Filter matching is ResourcePatternFilter.matches + AccessControlEntryFilter.matches;
validation is AclControlManager.validateNewAcl / validateFilter and AclApis.handleCreateAcls.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "creation_error",
    "filter_error",
]

WILDCARD = "*"  # ResourcePattern.WILDCARD_RESOURCE and the any-host ACL host
WILDCARD_PRINCIPAL = "User:*"  # StandardAuthorizerData.WILDCARD_PRINCIPAL
CLUSTER_NAME = "kafka-cluster"  # ResourcePattern / AuthorizerUtils: the only CLUSTER resource name


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (principal as `Type:name`)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls / DeleteAcls select; None name, principal or host = any."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        """ResourcePatternFilter.matches; MATCH selects every pattern that applies to the name."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.resource_name, WILDCARD)
        return self.resource_name.startswith(acl.resource_name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        """AccessControlEntryFilter.matches."""
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission_type in (AclPermissionType.ANY, acl.permission_type)


def creation_error(acl: AclBinding) -> str | None:
    """Why CreateAcls refuses a binding (INVALID_REQUEST with this message), None if valid: the
    checks of AclApis.handleCreateAcls, then AclControlManager.validateNewAcl, in their order."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {acl.permission_type.name}"
    return None


def filter_error(acl_filter: AclBindingFilter) -> str | None:
    """Why DeleteAcls refuses a filter (AclControlManager.validateFilter), None if valid."""
    if acl_filter.resource_type == ResourceType.UNKNOWN or acl_filter.pattern_type == PatternType.UNKNOWN:
        return "Unknown patternFilter."
    if (
        acl_filter.operation == AclOperation.UNKNOWN
        or acl_filter.permission_type == AclPermissionType.UNKNOWN
    ):
        return "Unknown entryFilter."
    return None
