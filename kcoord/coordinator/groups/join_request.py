"""A JoinGroup request as the group logic takes it: typed at the door (broker/apis/join_group.py).

Its own module because both halves of JoinGroup read it: `join.JoinHandler` (new, pending and known
members) and `static.StaticMembership` (KIP-345 replacements), which `join` calls; so `static`
needs nothing of `join` and the two never import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.member import Parked, Protocols, Respond
from kcoord.coordinator.groups.responses import join_error

__all__ = ["JoinRequest"]


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request, typed at the door (broker/apis/join_group.py): defaults filled in and
    v0's missing rebalance timeout resolved there. `respond` answers it, now or parked."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    reason: str | None
    version: int  # the request's api version: its answer (now or parked) is shaped for it
    client_id: str
    client_host: str
    respond: Respond
    # With an authorizer: may the caller DESCRIBE a topic? Only a classic member joining a consumer
    # group uses it, to filter what the group's regexes match (consumer/topics.py). None: no filter.
    describable: Callable[[str], bool] | None = None

    def parked(self) -> Parked:
        return Parked(self.respond, self.version)

    def because(self, text: str) -> str:
        """A rebalance reason, with the client's own (JoinGroup v8+) when it gave one."""
        return f"{text} (client reason: {self.reason})" if self.reason else text

    def fail(self, error: ErrorCode, member_id: str = "") -> None:
        self.respond(join_error(error, member_id))
