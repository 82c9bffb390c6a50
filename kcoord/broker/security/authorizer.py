"""Kafka's StandardAuthorizer decision table over an indexed set of ACLs (pure: no I/O, no clock).

The rules (StandardAuthorizerData.authorize / findAclRule / findResult, Kafka trunk):
1. a super user (`super.users`, compared as the `Type:name` string) is allowed everything;
2. the ACLs that apply to a resource are those of its type whose pattern matches its name: LITERAL
   with the same name, LITERAL `*`, PREFIXED with a prefix of the name;
3. of those, an entry counts if its principal is the caller's or `User:*` and its host the caller's
   IP address or `*`; an ALLOW entry counts for its own operation, for ALL, for DESCRIBE if it is
   READ, WRITE, DELETE or ALTER, and for DESCRIBE_CONFIGS if it is ALTER_CONFIGS; a DENY entry only
   for its own operation or ALL (a DENY READ does not deny DESCRIBE);
4. any counting DENY denies; else any counting ALLOW allows; else, if some ACL applies to the
   resource (whoever it names), deny; else `allow.everyone.if.no.acl.found` (default false).

The index: LITERAL ACLs by (resource type, name), PREFIXED ones by (resource type, prefix) with the
prefix lengths in use per type, so a decision costs one lookup per distinct prefix length, not a
scan (Kafka walks a sorted set instead; the result is the same, which a property test checks).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterable

from kcoord.broker.security.principal import KafkaPrincipal
from kcoord.coordinator.metadata.acl_model import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["SUPPORTED_OPERATIONS", "StandardAuthorizer", "client_address", "implies"]

_IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})

# AclEntry.supportedOperations: what authorized-operations bit fields are computed over.
_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        _O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER,
        _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}  # fmt: skip


def implies(acl_operation: AclOperation, permission: AclPermissionType, operation: AclOperation) -> bool:
    """Whether an entry with `acl_operation` and `permission` speaks about `operation` (rule 3)."""
    if acl_operation == AclOperation.ALL or acl_operation == operation:
        return True
    if permission != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return acl_operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl_operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


def client_address(client_host: str) -> str:
    """The caller's host as Kafka matches it: InetAddress.getHostAddress(), i.e. the IP without
    RequestMeta's leading `/`, and an IPv6 address in Java's uncompressed form (`0:0:0:0:0:0:0:1`)."""
    host = client_host[1:] if client_host.startswith("/") else client_host
    if ":" not in host:
        return host
    address, _, scope = host.partition("%")
    try:
        ipv6 = ipaddress.IPv6Address(address)
    except ValueError:
        return host
    if ipv6.ipv4_mapped is not None:  # Java's InetAddress makes ::ffff:a.b.c.d an Inet4Address
        return str(ipv6.ipv4_mapped)
    java = ":".join(f"{int(group, 16):x}" for group in ipv6.exploded.split(":"))
    return f"{java}%{scope}" if scope else java


class StandardAuthorizer:
    """The ACLs and the settings `super.users` and `allow.everyone.if.no.acl.found`."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._bindings: dict[AclBinding, None] = {}  # insertion-ordered set: DescribeAcls's order
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefix_lengths: dict[ResourceType, Counter[int]] = {}
        self._hosts: dict[str, str] = {}  # RequestMeta.client_host -> client_address (bounded)

    # -- the ACL set (CreateAcls, DeleteAcls and replay) ------------------------------------------
    def add(self, acl: AclBinding) -> bool:
        """Adds `acl`; False if it was there already (Kafka keeps one copy, StandardAcl equality)."""
        if acl in self._bindings:
            return False
        self._bindings[acl] = None
        key = (acl.resource_type, acl.resource_name)
        if acl.pattern_type == PatternType.PREFIXED:
            self._prefixed.setdefault(key, []).append(acl)
            self._prefix_lengths.setdefault(acl.resource_type, Counter())[len(acl.resource_name)] += 1
        else:
            self._literal.setdefault(key, []).append(acl)
        return True

    def remove(self, acl: AclBinding) -> bool:
        if acl not in self._bindings:
            return False
        del self._bindings[acl]
        key = (acl.resource_type, acl.resource_name)
        prefixed = acl.pattern_type == PatternType.PREFIXED
        index = self._prefixed if prefixed else self._literal
        bucket = index[key]
        bucket.remove(acl)
        if not bucket:
            del index[key]
        if prefixed:
            lengths = self._prefix_lengths[acl.resource_type]
            lengths[len(acl.resource_name)] -= 1
            if not lengths[len(acl.resource_name)]:
                del lengths[len(acl.resource_name)]
        return True

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The bindings `acl_filter` selects (all without one), oldest first."""
        return [acl for acl in self._bindings if acl_filter is None or acl_filter.matches(acl)]

    def __len__(self) -> int:
        return len(self._bindings)

    # -- decisions -----------------------------------------------------------------------------
    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Kafka's decision for one LITERAL resource; `host` as RequestMeta.client_host or an IP."""
        caller = str(principal)
        if caller in self.super_users:
            return True
        return self._decide(caller, self._address(host), operation, resource_type, name)

    def authorized_operations(
        self, principal: KafkaPrincipal, host: str, resource_type: ResourceType, name: str
    ) -> int:
        """AuthHelper.authorizedOperations: a bit per allowed supported operation (1 << code)."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << operation
        return bits

    def authorize_by_resource_type(
        self, principal: KafkaPrincipal, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Authorizer.authorizeByResourceType: may the caller do `operation` on SOME resource of the
        type? (InitProducerId without a transactional id: WRITE on any topic.)"""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True  # Kafka's probe: super users and allow.everyone pass here, despite DENYs
        caller, address = str(principal), self._address(host)
        allows: list[AclBinding] = []
        denied_literal: set[str] = set()
        denied_prefixes: set[str] = set()
        for acl in self._bindings:
            if acl.resource_type != resource_type or acl.host not in (WILDCARD, address):
                continue
            if acl.principal not in (caller, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            literal = acl.pattern_type == PatternType.LITERAL
            if acl.permission_type == AclPermissionType.DENY:
                if literal and acl.resource_name == WILDCARD:
                    return False
                (denied_literal if literal else denied_prefixes).add(acl.resource_name)
            elif acl.permission_type == AclPermissionType.ALLOW:
                allows.append(acl)
        return any(_allow_survives(acl, denied_literal, denied_prefixes) for acl in allows)

    def _address(self, host: str) -> str:
        address = self._hosts.get(host)
        if address is None:
            if len(self._hosts) > 4096:
                self._hosts.clear()
            address = self._hosts[host] = client_address(host)
        return address

    def _decide(
        self, caller: str, address: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        applies = allowed = False
        for bucket in self._buckets(resource_type, name):
            applies = True
            for acl in bucket:
                if acl.principal != caller and acl.principal != WILDCARD_PRINCIPAL:
                    continue
                if acl.host != WILDCARD and acl.host != address:
                    continue
                if not implies(acl.operation, acl.permission_type, operation):
                    continue
                if acl.permission_type == AclPermissionType.DENY:
                    return False
                allowed = True
        if allowed:
            return True
        return not applies and self.allow_everyone_if_no_acl_found

    def _buckets(self, resource_type: ResourceType, name: str) -> Iterable[list[AclBinding]]:
        literal = self._literal
        if (bucket := literal.get((resource_type, name))) is not None:
            yield bucket
        if name != WILDCARD and (bucket := literal.get((resource_type, WILDCARD))) is not None:
            yield bucket
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            for length in lengths:
                if length <= len(name) and (bucket := self._prefixed.get((resource_type, name[:length]))):
                    yield bucket


def _allow_survives(acl: AclBinding, denied_literal: set[str], denied_prefixes: set[str]) -> bool:
    """authorizeByResourceType: an ALLOW counts unless a DENY of the same literal name or a DENY
    prefix of its name dominates it (a wildcard ALLOW counts whatever else is denied)."""
    name = acl.resource_name
    if acl.pattern_type == PatternType.LITERAL and name == WILDCARD:
        return True
    if acl.pattern_type == PatternType.LITERAL and name in denied_literal:
        return False
    return not any(name[:n] in denied_prefixes for n in range(1, len(name) + 1))
