"""SyncGroup (14) v0-5: the assignment barrier (Kafka's doSyncGroup).

The leader's assignment is persisted as a GroupMetadata record; only when it is durable does the
group become Stable and every parked SyncGroup get its assignment.
"""

from __future__ import annotations

import logging

from coordinator.groups.config import RequestMeta
from coordinator.groups.errors import APPEND_FAILED, ErrorCode
from coordinator.groups.group import Group
from coordinator.groups.member import Member, Parked, Respond
from coordinator.groups.rebalance import Rebalancer
from coordinator.groups.responses import sync_error, sync_response
from coordinator.groups.runtime import Runtime
from coordinator.groups.state import GroupState

__all__ = ["SyncHandler"]

log = logging.getLogger("coordinator.groups")


class SyncHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    def handle(self, req: dict[str, object], meta: RequestMeta, respond: Respond) -> None:
        version = meta.api_version
        group_id = str(req.get("group_id") or "")
        member_id = str(req.get("member_id") or "")
        group = self.rt.group(group_id)
        error = self._check(group, group_id, req, meta)
        if error is not None or group is None:
            respond(sync_error(version, error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            respond(sync_error(version, ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._park(group, member, Parked(respond, version))
            if member_id == group.leader_id:
                self._store_assignment(group, _assignments(req, group))
        else:  # Stable: return the member's current assignment
            self.rb.remove_pending_sync(group, member_id)
            self.rb.schedule_session(group, member_id, member.session_timeout_ms)
            respond(sync_response(version, group.protocol_type, group.protocol_name, member.assignment))

    def _check(
        self, group: Group | None, group_id: str, req: dict[str, object], meta: RequestMeta
    ) -> ErrorCode | None:
        """Common checks (loading -> REBALANCE_IN_PROGRESS, as Kafka does for old clients), then
        member, generation and (v5+) protocol checks, in Kafka's order."""
        if meta.api_version >= 5 and (req.get("protocol_type") is None or req.get("protocol_name") is None):
            # KafkaApis.handleSyncGroupRequest (areMandatoryProtocolTypeAndNamePresent) answers this
            # before the coordinator sees the request: before loading, group and member checks.
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        error = self.rt.phase_error()
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            return error
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group is None or group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        iid = req.get("group_instance_id")
        error = group.validate_member(str(req.get("member_id") or ""), None if iid is None else str(iid))
        if error is not None:
            return error
        if req.get("generation_id") != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return _protocol_error(group, req, meta.api_version)

    def _park(self, group: Group, member: Member, parked: Parked) -> None:
        displaced, member.awaiting_sync = member.awaiting_sync, parked
        if displaced is not None:
            # Kafka overwrites the older callback; we answer it so its connection is not stuck.
            displaced.respond(sync_error(displaced.api_version, ErrorCode.REBALANCE_IN_PROGRESS))
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

        self.rt.write([group.to_record(assignments)], on_done, apply=False)  # live group: a snapshot


def _assignments(req: dict[str, object], group: Group) -> dict[str, bytes]:
    """The leader's assignment; members it left out get empty bytes, unknown ids are ignored."""
    given: dict[str, bytes] = {}
    entries = req.get("assignments") or []
    assert isinstance(entries, list)
    for entry in entries:
        given[str(entry["member_id"])] = bytes(entry["assignment"] or b"")
    return {member_id: given.get(member_id, b"") for member_id in group.members}


def _protocol_error(group: Group, req: dict[str, object], version: int) -> ErrorCode | None:
    """SyncGroup v5+: ProtocolType and ProtocolName are mandatory and must match the group's."""
    if version < 5:
        return None
    protocol_type, protocol_name = req.get("protocol_type"), req.get("protocol_name")
    if protocol_type != group.protocol_type or protocol_name != group.protocol_name:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None
