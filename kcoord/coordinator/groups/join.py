"""JoinGroup (11) v0-9: entry checks, new/pending/known/static members (Kafka's handleJoinGroup)."""

from __future__ import annotations

import logging

from kcoord.coordinator.groups.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.member import Member
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.responses import join_error
from kcoord.coordinator.groups.runtime import Runtime
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.static import StaticMembership
from kcoord.coordinator.groups.timers import pending_key

# JoinRequest lives in join_request.py (static.py reads it too); the door imports it from here.
__all__ = ["JoinHandler", "JoinRequest"]

log = logging.getLogger("coordinator.groups")


class JoinHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer
        self.static = StaticMembership(rt, rebalancer)

    def handle(self, r: JoinRequest) -> None:
        group = self._checked_group(r)
        if group is None:
            return
        if r.member_id == "":
            self._join_new_member(group, r)
        elif r.member_id in group.pending_members:
            self.rt.timers.cancel(pending_key(group.group_id, r.member_id))
            self.add_member_and_rebalance(group, r, r.member_id)
        else:
            self._join_known_member(group, r)
        if group.state is GroupState.PREPARING_REBALANCE:
            self.rb.maybe_complete_join(group)

    def _checked_group(self, r: JoinRequest) -> Group | None:
        """Kafka's entry checks, in order; answers and returns None when one fails."""
        error = self.rt.service_error(r.group_id)
        cfg = self.rt.config
        if error is None and not (
            cfg.group_min_session_timeout_ms <= r.session_timeout_ms <= cfg.group_max_session_timeout_ms
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        if error is None:
            # Loading comes last: GroupCoordinatorService.joinGroup checks the group id and the
            # session timeout before it hands the request to its runtime, which refuses it then.
            error = self.rt.phase_error(r.group_id)
        if error is not None:
            r.fail(error, r.member_id)
            return None
        group = self.rt.group(r.group_id)
        if group is None and r.member_id:
            r.fail(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)
            return None
        group = group or self.rt.get_or_create_group(r.group_id)
        return self._accepted(group, r)

    def _accepted(self, group: Group, r: JoinRequest) -> Group | None:
        if not self._can_accept(group, r.member_id):
            # Kafka's ClassicGroup.remove forgets the member, pending (KIP-394) or current; unlike
            # Kafka we also re-check the join phase at once, so nobody waits for it (compat.md).
            r.fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
            if r.member_id in group.members:
                self.rb.remove_member_and_update(group, r.member_id, "group is over capacity")
            elif r.member_id in group.pending_members:
                self.rb.remove_pending_member(group, r.member_id)
            return None
        if group.state is GroupState.DEAD:
            r.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, r.member_id)
            return None
        if not group.supports_protocols(r.protocol_type, tuple(name for name, _ in r.protocols)):
            r.fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, r.member_id)
            return None
        return group

    def _can_accept(self, group: Group, member_id: str) -> bool:
        """KIP-389 acceptJoiningMember."""
        max_size = self.rt.config.group_max_size
        if max_size is None or group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            return (
                member is not None and member.awaiting_join is not None
            ) or group.num_awaiting_join < max_size
        return member is not None or len(group.members) < max_size

    # -- new members ------------------------------------------------------------------------------
    def _join_new_member(self, group: Group, r: JoinRequest) -> None:
        if r.group_instance_id is not None:
            new_id = self.rt.new_member_id(r.group_instance_id)
            old_id = group.static_member_id(r.group_instance_id)
            if old_id is not None:
                self.static.replace_and_rebalance(group, r, old_id, new_id)
            else:
                self.add_member_and_rebalance(group, r, new_id)
            return
        new_id = self.rt.new_member_id(r.client_id)
        if r.version >= 4:
            # KIP-394: hand out the id and wait for the member to come back with it.
            self.rb.add_pending_member(group, new_id, r.session_timeout_ms)
            r.fail(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            return
        self.add_member_and_rebalance(group, r, new_id)

    def add_member_and_rebalance(self, group: Group, r: JoinRequest, member_id: str) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=r.group_instance_id,
            client_id=r.client_id,
            client_host=r.client_host,
            session_timeout_ms=r.session_timeout_ms,
            rebalance_timeout_ms=r.rebalance_timeout_ms,
            protocol_type=r.protocol_type,
            protocols=r.protocols,
            is_new=True,
        )
        if group.state is GroupState.PREPARING_REBALANCE and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True  # extends the initial delayed join (KIP-134)
        group.add_member(member, r.parked())
        # A new member cannot heartbeat while parked: it gets the 5-minute new-member timeout.
        self.rb.schedule_session(group, member_id, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.rb.maybe_prepare_rebalance(group, r.because(f"adding new member {member_id}"))

    # -- known members ----------------------------------------------------------------------------
    def _join_known_member(self, group: Group, r: JoinRequest) -> None:
        error = group.validate_member(r.member_id, r.group_instance_id)
        if error is not None:
            r.fail(error, r.member_id)
            return
        member = group.members[r.member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, r)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.protocols == r.protocols:
                # Lost JoinGroup response: answer with the current generation again.
                self._answer_current(group, member, r, with_members=member.member_id == group.leader_id)
            else:
                self._update_member_and_rebalance(group, member, r)
        elif state is GroupState.STABLE:
            if member.member_id == group.leader_id or member.protocols != r.protocols:
                # The leader's rejoin always rebalances (how clients force a reassignment).
                self._update_member_and_rebalance(group, member, r)
            else:
                self._answer_current(group, member, r, with_members=False)
        else:
            log.warning(
                "group_id=%s member_id=%s joined in unexpected state %s",
                group.group_id,
                r.member_id,
                state.value,
            )
            r.fail(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)

    def _update_member_and_rebalance(self, group: Group, member: Member, r: JoinRequest) -> None:
        group.update_member(member, r.protocols, r.session_timeout_ms, r.rebalance_timeout_ms)
        displaced = member.awaiting_join
        group.park_join(member, r.parked())
        if displaced is not None:
            # Kafka drops the older parked response; we answer it so its connection is not stuck.
            displaced.respond(join_error(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        self.rb.maybe_prepare_rebalance(
            group, r.because(f"member {member.member_id} rejoined in {group.state.value}")
        )

    def _answer_current(self, group: Group, member: Member, r: JoinRequest, *, with_members: bool) -> None:
        r.respond(group.join_response(member.member_id, with_members=with_members))
