"""The typed answers of JoinGroup and SyncGroup, now or once parked.

The group logic answers with these; `kcoord/broker/apis/join_group.py` and `sync_group.py`
shape them for the request's version (the wire's business, not the group logic's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.errors import ErrorCode

__all__ = ["JoinAnswer", "JoinMember", "SyncAnswer", "join_error", "sync_error", "sync_response"]


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinAnswer:
    """A JoinGroup answer. `members` only for the leader; `skip_assignment` only for a static
    leader replaced by a v9+ request (KIP-814)."""

    error: ErrorCode = ErrorCode.NONE
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: Sequence[JoinMember] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncAnswer:
    """A SyncGroup answer: on error no protocol and an empty assignment (never null)."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


def join_error(error: ErrorCode, member_id: str = "") -> JoinAnswer:
    """Kafka's JoinGroupResult(memberId, error): generation -1, no protocol, leader ""."""
    return JoinAnswer(error=error, member_id=member_id)


def sync_response(protocol_type: str | None, protocol_name: str | None, assignment: bytes) -> SyncAnswer:
    return SyncAnswer(ErrorCode.NONE, protocol_type, protocol_name, assignment)


def sync_error(error: ErrorCode) -> SyncAnswer:
    return SyncAnswer(error)
