"""The classic group states and the one table of legal transitions (Kafka's ClassicGroupState)."""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["VALID_PREVIOUS", "GroupState", "IllegalStateTransition"]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    """No members (offsets may remain). JoinGroup from a new member -> PREPARING_REBALANCE with the
    initial rebalance delay. Heartbeat/SyncGroup: UNKNOWN_MEMBER_ID. Simple commits (generation -1)
    allowed. DeleteGroups: -> DEAD. Offsets expire retention_ms after the group became Empty."""

    PREPARING_REBALANCE = "PreparingRebalance"
    """Join phase: JoinGroups are parked until every known member rejoined (no pending members) or
    the join timer fires -> COMPLETING_REBALANCE (or EMPTY if nobody is left). Heartbeat and
    SyncGroup: REBALANCE_IN_PROGRESS. Member commits with the current generation are accepted."""

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Waiting for the leader's SyncGroup; followers' SyncGroups are parked. The persisted
    assignment -> STABLE. Any membership change -> PREPARING_REBALANCE. Heartbeat: NONE.
    OffsetCommit: REBALANCE_IN_PROGRESS."""

    STABLE = "Stable"
    """Assignment distributed. SyncGroup returns the stored assignment. New member, leader rejoin,
    changed metadata, leave or expiry -> PREPARING_REBALANCE."""

    DEAD = "Dead"
    """Deleted or expired; the object is dropped from the manager. Requests that still reach it
    get COORDINATOR_NOT_AVAILABLE."""


VALID_PREVIOUS: Final[dict[GroupState, frozenset[GroupState]]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

# Kafka's canRebalance: a rebalance can be started from these states.
CAN_REBALANCE: Final = frozenset({GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE})


class IllegalStateTransition(RuntimeError):
    """A transition outside `VALID_PREVIOUS`: always a bug in the group logic, never a client error."""

    def __init__(self, group_id: str, old: GroupState, new: GroupState) -> None:
        super().__init__(f"group {group_id!r}: illegal transition {old.value} -> {new.value}")
        self.group_id = group_id
        self.old = old
        self.new = new
