"""A member of a classic group (Kafka's MemberMetadata / ClassicGroupMember)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Member", "Parked", "Protocols", "Respond"]

Respond = Callable[[Any], None]
"""Answers a JoinGroup with a `responses.JoinAnswer`, a SyncGroup with a `responses.SyncAnswer`, now
or parked; the server shapes the answer for the request's version."""
Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference


@dataclass(frozen=True, slots=True)
class Parked:
    """A JoinGroup or SyncGroup response held back until the barrier completes."""

    respond: Respond
    api_version: int


@dataclass(slots=True, eq=False)
class Member:
    """Mutable per-member state; only `Group` and the rebalance logic change it.

    `awaiting_join` / `awaiting_sync` hold the parked response, if any. `is_new` marks a member
    added by JoinGroup whose first join phase has not completed yet (its session timer is the
    5-minute new-member join timeout and it can expire while parked).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)

    def metadata_for(self, protocol_name: str | None) -> bytes:
        """This member's metadata for `protocol_name` (b"" if it does not support it)."""
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports (Kafka's `vote`)."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """A parked member is alive (its session expiry is ignored), unless it is new (Kafka)."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None
