"""SyncGroup (14) v0-5: the assignment barrier (Kafka's doSyncGroup).

The leader's assignment is persisted as a GroupMetadata record; only when it is durable does the
group become Stable and every parked SyncGroup get its assignment.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.member import Member, Parked
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.responses import sync_error, sync_response
from kcoord.coordinator.groups.runtime import Runtime, Write
from kcoord.coordinator.groups.state import GroupState

__all__ = ["SyncHandler", "SyncRequest"]

log = logging.getLogger("coordinator.groups")


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup request, typed at the door (broker/apis/sync_group.py, which also answers v5+
    requests without a protocol type or name, as KafkaApis does before the coordinator sees them).
    `protocol` is (type, name) for v5+, whose values must match the group's; None below v5."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol: tuple[str, str] | None
    assignments: Mapping[str, bytes]  # the leader's; empty for followers
    parked: Parked  # answers it, now or once the assignment is durable


class SyncHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    def handle(self, request: SyncRequest) -> None:
        parked = request.parked
        member_id = request.member_id
        group = self.rt.group(request.group_id)
        error = self._check(group, request)
        if error is not None or group is None:
            parked.respond(sync_error(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            parked.respond(sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._park(group, member, parked)
            if member_id == group.leader_id:
                self._store_assignment(group, _assignments(request.assignments, group))
        else:  # Stable: return the member's current assignment
            self.rb.remove_pending_sync(group, member_id)
            # Scala re-arms the session here, Java does not; a SyncGroup proves liveness (compat.md).
            self.rb.schedule_session(group, member_id, member.session_timeout_ms)
            parked.respond(sync_response(group.protocol_type, group.protocol_name, member.assignment))

    def _check(self, group: Group | None, request: SyncRequest) -> ErrorCode | None:
        """Common checks (loading -> REBALANCE_IN_PROGRESS, as Kafka does for old clients), then
        member, generation and (v5+) protocol checks, in Kafka's order."""
        # GroupCoordinatorService.syncGroup refuses "" before its runtime's loading check.
        error = self.rt.service_error(request.group_id) or self.rt.phase_error(request.group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            return error
        if group is None or group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        # SyncGroup v5+: ProtocolType and ProtocolName must match the group's
        if request.protocol is not None and request.protocol != (group.protocol_type, group.protocol_name):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _park(self, group: Group, member: Member, parked: Parked) -> None:
        displaced, member.awaiting_sync = member.awaiting_sync, parked
        if displaced is not None:
            # Kafka overwrites the older callback; we answer it so its connection is not stuck.
            displaced.respond(sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        self.rb.remove_pending_sync(group, member.member_id)

    def _store_assignment(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation_id

        def on_done(error: BaseException | None) -> None:
            # Another member may have joined meanwhile: only act on the same generation's barrier.
            if not self.rt.is_current(group) or group.state is not GroupState.COMPLETING_REBALANCE:
                return
            if group.generation_id != generation:
                return
            if error is not None:
                log.warning("group_id=%s failed to persist the assignment: %r", group.group_id, error)
                # Every append failure is a storage fault: NOT_COORDINATOR, as Kafka (errors.py).
                self.rb.reset_and_propagate_assignment_error(group, APPEND_FAILED)
                self.rb.maybe_prepare_rebalance(group, "failed to persist the group assignment")
                return
            self.rb.set_and_propagate_assignment(group, assignments)
            self.rt.transition(group, GroupState.STABLE)

        self.rt.run(Write([group.to_record(assignments)], on_done, durable=()))  # live group: a snapshot


def _assignments(given: Mapping[str, bytes], group: Group) -> dict[str, bytes]:
    """The leader's assignment; members it left out get empty bytes, unknown ids are ignored."""
    return {member_id: given.get(member_id, b"") for member_id in group.members}
