"""The rebalance protocol: join phase, sync barrier, member removal and every group timer.

Mirrors Kafka's GroupCoordinator (`prepareRebalance`, `onCompleteJoin`, `InitialDelayedJoin`,
`onExpireHeartbeat`, `onExpirePendingSync`, `removeMemberAndUpdateGroup`). Timer callbacks capture
the group object and re-check that it is still current, so a late timer is a no-op.
"""

from __future__ import annotations

import logging
from functools import partial

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.member import Member
from kcoord.coordinator.groups.records import LogRecord
from kcoord.coordinator.groups.responses import join_error, sync_error, sync_response
from kcoord.coordinator.groups.runtime import Runtime, Write
from kcoord.coordinator.groups.state import CAN_REBALANCE, GroupState
from kcoord.coordinator.groups.timers import join_key, pending_key, session_key, sync_key

__all__ = ["Rebalancer"]

log = logging.getLogger("coordinator.groups")

PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
EMPTY = GroupState.EMPTY


class Rebalancer:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    # -- sessions ---------------------------------------------------------------------------------
    def schedule_session(self, group: Group, member_id: str, timeout_ms: int) -> None:
        """(Re)arm a member's heartbeat deadline (Kafka's completeAndScheduleNextHeartbeatExpiration)."""
        self.rt.timers.schedule(
            session_key(group.group_id, member_id),
            timeout_ms,
            partial(self._on_session_expired, group, member_id),
        )

    def _on_session_expired(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if not self.rt.is_current(group) or member is None or member.has_satisfied_heartbeat():
            return
        log.info("group_id=%s member_id=%s session expired, removing it", group.group_id, member_id)
        self.remove_member_and_update(group, member_id, "session expired")

    def add_pending_member(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        """KIP-394: a member id handed out with MEMBER_ID_REQUIRED expires after the session timeout."""
        group.pending_members.add(member_id)
        self.rt.timers.schedule(
            pending_key(group.group_id, member_id),
            session_timeout_ms,
            partial(self._on_pending_expired, group, member_id),
        )

    def remove_pending_member(self, group: Group, member_id: str) -> None:
        group.pending_members.discard(member_id)
        self.rt.timers.cancel(pending_key(group.group_id, member_id))
        if group.state is PREPARING:
            self.maybe_complete_join(group)

    def _on_pending_expired(self, group: Group, member_id: str) -> None:
        if self.rt.is_current(group) and member_id in group.pending_members:
            log.info("group_id=%s member_id=%s pending member expired", group.group_id, member_id)
            self.remove_pending_member(group, member_id)

    # -- member removal ---------------------------------------------------------------------------
    def remove_member(self, group: Group, member_id: str) -> Member | None:
        """Drop a member: its parked JoinGroup/SyncGroup get UNKNOWN_MEMBER_ID, its timer is cancelled."""
        member = group.members.get(member_id)
        if member is None:
            return None
        parked_join = group.take_join(member)
        if parked_join is not None:
            parked_join.respond(join_error(ErrorCode.UNKNOWN_MEMBER_ID))
        parked_sync, member.awaiting_sync = member.awaiting_sync, None
        if parked_sync is not None:  # every request gets one answer (compat.md)
            parked_sync.respond(sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove_member(member_id)
        self.rt.timers.cancel(session_key(group.group_id, member_id))
        return member

    def remove_member_and_update(self, group: Group, member_id: str, reason: str) -> None:
        """Kafka's removeMemberAndUpdateGroup: remove, then rebalance or re-check the join phase."""
        self.remove_member(group, member_id)
        self.after_membership_change(group, reason)

    def after_membership_change(self, group: Group, reason: str) -> None:
        if group.state in (STABLE, COMPLETING):
            self.prepare_rebalance(group, reason)
        elif group.state is PREPARING:
            self.maybe_complete_join(group)

    # -- join phase -------------------------------------------------------------------------------
    def maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state in CAN_REBALANCE:
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        """Start a join phase; from Empty with the KIP-134 initial delay, else the rebalance timeout."""
        if group.state is COMPLETING:
            self.reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.rt.timers.cancel(sync_key(group.group_id))
        group.pending_sync_members.clear()
        initial = group.state is EMPTY
        if initial:
            delay_ms = self.rt.config.group_initial_rebalance_delay_ms
            remaining_ms = max(group.rebalance_timeout_ms() - delay_ms, 0)
            group.new_member_added = False
            self.rt.timers.schedule(
                join_key(group.group_id),
                delay_ms,
                partial(self._on_initial_delay, group, delay_ms, remaining_ms),
            )
        else:
            self._schedule_join_timeout(group)
        self.rt.transition(group, PREPARING, reason)
        if not initial:
            self.maybe_complete_join(group)

    def _schedule_join_timeout(self, group: Group) -> None:
        self.rt.timers.schedule(
            join_key(group.group_id), group.rebalance_timeout_ms(), partial(self._on_join_timeout, group)
        )

    def _on_initial_delay(self, group: Group, delay_ms: int, remaining_ms: int) -> None:
        """InitialDelayedJoin: extend by up to the delay per new member, within the rebalance timeout."""
        if not self.rt.is_current(group) or group.state is not PREPARING:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.rt.config.group_initial_rebalance_delay_ms, remaining_ms)
            remaining = max(remaining_ms - delay_ms, 0)
            self.rt.timers.schedule(
                join_key(group.group_id), delay, partial(self._on_initial_delay, group, delay, remaining)
            )
            return
        self.complete_join(group)

    def _on_join_timeout(self, group: Group) -> None:
        if self.rt.is_current(group) and group.state is PREPARING:
            self.complete_join(group)

    def maybe_complete_join(self, group: Group) -> None:
        """Complete early once every known member rejoined, except during the initial delay."""
        # Also on a session or pending expiry, as Scala; Java completes those at once (compat.md).
        if group.state is PREPARING and group.previous_state is not EMPTY and group.has_all_members_joined():
            self.complete_join(group)

    def complete_join(self, group: Group) -> None:
        """Kafka's onCompleteJoin."""
        self.rt.timers.cancel(join_key(group.group_id))
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.group_instance_id is None:
                log.info("group_id=%s member_id=%s did not rejoin in time", group.group_id, member.member_id)
                self.remove_member(group, member.member_id)
        if not group.elect_joined_leader() and group.members:
            # Only static members that did not rejoin are left (KIP-345): wait another rebalance timeout.
            self._schedule_join_timeout(group)
            return
        group.generation_id += 1
        group.pending_sync_members.clear()
        if not group.members:
            group.protocol_name = None
            group.recompute_subscriptions()
            self.rt.transition(group, EMPTY)
            self._append_logged(group, [group.to_record()])
            return
        group.protocol_name = group.select_protocol()
        group.recompute_subscriptions()
        self.rt.transition(group, COMPLETING)
        self._answer_joins(group)

    def _answer_joins(self, group: Group) -> None:
        for member in group.members.values():
            parked = group.take_join(member)
            if parked is not None:
                is_leader = member.member_id == group.leader_id
                parked.respond(group.join_response(member.member_id, with_members=is_leader))
            self.schedule_session(group, member.member_id, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.rt.timers.schedule(
            sync_key(group.group_id),
            group.rebalance_timeout_ms(),
            partial(self._on_sync_timeout, group, group.generation_id),
        )

    def _append_logged(self, group: Group, records: list[LogRecord]) -> None:
        """Kafka only logs a failure to write the empty-group record at join completion."""

        def on_done(error: BaseException | None) -> None:
            if error is not None:
                log.warning("group_id=%s failed to persist group metadata: %r", group.group_id, error)

        self.rt.run(Write(records, on_done, durable=()))  # a snapshot of the live group

    # -- sync barrier -----------------------------------------------------------------------------
    def remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.rt.timers.cancel(sync_key(group.group_id))

    def _on_sync_timeout(self, group: Group, generation_id: int) -> None:
        """Kafka's onExpirePendingSync: drop members that never sent SyncGroup, then rebalance."""
        if not self.rt.is_current(group) or group.generation_id != generation_id:
            return
        if group.state not in (COMPLETING, STABLE) or not group.pending_sync_members:
            return
        missing = sorted(group.pending_sync_members)
        log.info("group_id=%s members %s never sent SyncGroup, removing them", group.group_id, missing)
        for member_id in missing:
            self.remove_member(group, member_id)
        self.prepare_rebalance(group, f"removing {missing} on pending sync expiration")

    def set_and_propagate_assignment(self, group: Group, assignments: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        self._propagate(group, None)

    def reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate(group, error)

    def _propagate(self, group: Group, error: ErrorCode | None) -> None:
        for member in group.members.values():
            parked, member.awaiting_sync = member.awaiting_sync, None
            if parked is None:
                continue
            if error is None:
                parked.respond(sync_response(group.protocol_type, group.protocol_name, member.assignment))
            else:
                parked.respond(sync_error(error))
            self.schedule_session(group, member.member_id, member.session_timeout_ms)

    # -- teardown ---------------------------------------------------------------------------------
    def cancel_group_timers(self, group: Group) -> None:
        timers = self.rt.timers
        timers.cancel(join_key(group.group_id))
        timers.cancel(sync_key(group.group_id))
        for member_id in group.members:
            timers.cancel(session_key(group.group_id, member_id))
        for member_id in group.pending_members:
            timers.cancel(pending_key(group.group_id, member_id))

    def fail_parked(self, group: Group, error: ErrorCode) -> None:
        """Answer every parked JoinGroup and SyncGroup of the group with `error`."""
        for member in group.members.values():
            parked_join = group.take_join(member)
            if parked_join is not None:
                parked_join.respond(join_error(error, member.member_id))
            parked_sync, member.awaiting_sync = member.awaiting_sync, None
            if parked_sync is not None:
                parked_sync.respond(sync_error(error))

    def drop_group(self, group: Group) -> None:
        """Any -> Dead: cancel its timers, answer its parked requests and forget it; the replay of a
        group tombstone (GroupManager.apply), live or in recovery."""
        self.cancel_group_timers(group)
        self.fail_parked(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        self.rt.transition(group, GroupState.DEAD)
        if self.rt.groups.get(group.group_id) is group:
            del self.rt.groups[group.group_id]
