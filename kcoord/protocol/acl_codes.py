"""Kafka's ACL wire codes, defined once for the server's authorizer and the tools' `kcoord acls`:
org.apache.kafka.common.acl.AclOperation / AclPermissionType and common.resource.ResourceType /
PatternType. A code Kafka does not know is UNKNOWN (0), as their `fromCode` makes it (`of`)."""

from __future__ import annotations

import enum
from typing import Self

__all__ = ["AclOperation", "AclPermissionType", "PatternType", "ResourceType"]


class _Coded(enum.IntEnum):
    @classmethod
    def of(cls, code: int) -> Self:
        """Kafka's fromCode: anything unknown is UNKNOWN (0)."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4
