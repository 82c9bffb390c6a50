"""Heartbeat (12) v0-4 and LeaveGroup (13) v0-5."""

from __future__ import annotations

from collections.abc import Sequence

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.runtime import Runtime
from kcoord.coordinator.groups.state import GroupState

__all__ = ["LeaveEntry", "MembershipHandler"]

_HEARTBEAT_BY_STATE = {
    GroupState.EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
    GroupState.PREPARING_REBALANCE: ErrorCode.REBALANCE_IN_PROGRESS,  # how Stable members learn to rejoin
    GroupState.COMPLETING_REBALANCE: ErrorCode.NONE,
    GroupState.STABLE: ErrorCode.NONE,
}

_NONE, _LOAD_IN_PROGRESS = ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
_UNKNOWN_MEMBER_ID, _DEAD = ErrorCode.UNKNOWN_MEMBER_ID, GroupState.DEAD

LeaveEntry = tuple[str, str | None, ErrorCode]


class MembershipHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    # -- Heartbeat --------------------------------------------------------------------------------
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        """Typed at the door (broker/apis/heartbeat.py); always answered at once."""
        # The hottest path of a coordinator (every member, every few seconds): Enum members are read
        # from module constants, since each `ErrorCode.X` / `GroupState.X` lookup costs ~90 ns.
        if self.rt.phase_error(group_id) is not None or not group_id:
            return self._heartbeat_entry_error(group_id)
        group = self.rt.groups.get(group_id)
        if group is None:
            return _UNKNOWN_MEMBER_ID  # not NOT_AVAILABLE: the client must rejoin (KAFKA-8386)
        state = group.state
        if state is _DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        result = _HEARTBEAT_BY_STATE[state]
        if result is not _UNKNOWN_MEMBER_ID:
            self.rb.schedule_session(group, member_id, group.members[member_id].session_timeout_ms)
        return result

    def _heartbeat_entry_error(self, group_id: str) -> ErrorCode:
        """GroupCoordinatorService.heartbeat refuses an inactive service and "" itself, before its
        runtime's loading check; loading answers NONE (old clients do not know LOAD_IN_PROGRESS)."""
        error = self.rt.service_error(group_id) or self.rt.phase_error(group_id)
        return _NONE if error is None or error is _LOAD_IN_PROGRESS else error

    # -- LeaveGroup -------------------------------------------------------------------------------
    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[LeaveEntry]]:
        """Typed at the door (broker/apis/leave_group.py, which reads v0-2's single MemberId as a
        one-entry batch and builds the version's response); always answered at once. Returns the
        group-level error and a (member id, instance id, error) entry per requested member."""
        # GroupCoordinatorService.leaveGroup refuses "" before its runtime's loading check.
        error = self.rt.service_error(group_id) or self.rt.phase_error(group_id)
        if error is not None:
            return error, []
        group = self.rt.group(group_id)
        if group is None:
            return ErrorCode.NONE, [(m, iid, ErrorCode.UNKNOWN_MEMBER_ID) for m, iid in members]
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        # One reaction per removal, as Scala; Java reacts once per batch (compat.md).
        return ErrorCode.NONE, [(m, iid, self._leave_one(group, m, iid)) for m, iid in members]

    def _leave_one(self, group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
        if member_id == "":
            # Admin removal of a static member by instance id (KIP-345).
            current = group.static_member_id(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self.rb.remove_member_and_update(group, current, f"static member {group_instance_id} removed")
            return ErrorCode.NONE
        if member_id in group.pending_members:
            self.rb.remove_pending_member(group, member_id)
            return ErrorCode.NONE
        error = group.validate_member(member_id, group_instance_id)
        if error is not None:
            return error
        self.rb.remove_member_and_update(group, member_id, f"member {member_id} left the group")
        return ErrorCode.NONE
