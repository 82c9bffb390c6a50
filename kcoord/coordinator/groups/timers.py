"""The group tenant's timer keys: the only way the group logic waits is the runtime's `KeyedTimers`
(`coordinator.runtime.time`), and every key it schedules is named here.

Every timer has a string key that says what it is for (Kafka's terms, so grep works across both
codebases). Scheduling a key that exists replaces it; cancelling an unknown key is a no-op.

Keys (see `docs/kafka-group-protocol.md` §6):

* ``session:{group_id}:{member_id}`` — member session / new-member join timeout (Kafka's heartbeat key)
* ``pending:{group_id}:{member_id}`` — member id handed out with MEMBER_ID_REQUIRED, not yet rejoined
* ``join:{group_id}`` — delayed-join purgatory: initial rebalance delay or rebalance timeout
* ``sync:{group_id}`` — pending-sync timeout: members that got a JoinGroup answer but never synced
* ``expire-offsets`` — the periodic offset-retention check
"""

from __future__ import annotations

__all__ = [
    "EXPIRE_OFFSETS_KEY",
    "join_key",
    "pending_key",
    "session_key",
    "sync_key",
]

EXPIRE_OFFSETS_KEY = "expire-offsets"


def session_key(group_id: str, member_id: str) -> str:
    return f"session:{group_id}:{member_id}"


def pending_key(group_id: str, member_id: str) -> str:
    return f"pending:{group_id}:{member_id}"


def join_key(group_id: str) -> str:
    return f"join:{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync:{group_id}"
