"""KIP-345 static membership: a known group.instance.id rejoining with MemberId "".

Kafka's updateStaticMemberAndRebalance: the member is re-keyed to a new id (fencing the old id's
parked requests with FENCED_INSTANCE_ID); in Stable with an unchanged selected protocol there is no
rebalance: the replacement is persisted and then answered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.member import Member, Parked, Protocols
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.responses import join_error, sync_error
from kcoord.coordinator.groups.runtime import Runtime, Write
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.timers import session_key

__all__ = ["StaticMembership"]

log = logging.getLogger("coordinator.groups")


@dataclass(frozen=True, slots=True)
class _Saved:
    """What a failed persist of the replacement restores."""

    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str


class StaticMembership:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    def replace_and_rebalance(self, group: Group, r: JoinRequest, old_id: str, new_id: str) -> None:
        previous_leader = group.leader_id
        member = self._replace(group, old_id, new_id)
        saved = _Saved(
            member.protocols,
            member.session_timeout_ms,
            member.rebalance_timeout_ms,
            member.client_id,
            member.client_host,
        )
        group.update_member(member, r.protocols, r.session_timeout_ms, r.rebalance_timeout_ms)
        # Kafka refreshes only protocols and timeouts; we also take the new client id/host (compat.md).
        member.client_id, member.client_host = r.client_id, r.client_host
        parked = r.parked()
        group.park_join(member, parked)
        if group.state is GroupState.STABLE:
            if group.select_protocol() == group.protocol_name:
                self._persist_without_rebalance(group, member, parked, old_id, saved, previous_leader)
            else:
                self.rb.prepare_rebalance(group, f"static member {new_id} changed the selected protocol")
        elif group.state is GroupState.COMPLETING_REBALANCE:
            # The leader may be assigning to the old id: rebalance (KAFKA-9801).
            self.rb.prepare_rebalance(group, f"static member {new_id} rejoined during CompletingRebalance")

    def _replace(self, group: Group, old_id: str, new_id: str) -> Member:
        old = group.members[old_id]
        parked_join = group.take_join(old)
        if parked_join is not None:
            parked_join.respond(join_error(ErrorCode.FENCED_INSTANCE_ID, old_id))
        parked_sync, old.awaiting_sync = old.awaiting_sync, None
        if parked_sync is not None:
            parked_sync.respond(sync_error(ErrorCode.FENCED_INSTANCE_ID))
        self.rt.timers.cancel(session_key(group.group_id, old_id))
        member = group.replace_static_member(old_id, new_id)
        self.rb.schedule_session(group, new_id, member.session_timeout_ms)
        log.info(
            "group_id=%s group_instance_id=%s member_id=%s replaced %s",
            group.group_id,
            member.group_instance_id,
            new_id,
            old_id,
        )
        return member

    def _persist_without_rebalance(
        self,
        group: Group,
        member: Member,
        parked: Parked,
        old_id: str,
        saved: _Saved,
        previous_leader: str | None,
    ) -> None:
        generation = group.generation_id

        def on_done(error: BaseException | None) -> None:
            if member.awaiting_join is not parked or group.members.get(member.member_id) is not member:
                return  # already answered: a rebalance completed meanwhile, or the member left
            group.take_join(member)
            if error is None:
                self._answer_replaced(group, member, parked, previous_leader)
                return
            log.warning(
                "group_id=%s failed to persist static member %s: %r", group.group_id, member.member_id, error
            )
            if (
                self.rt.is_current(group)
                and group.state is GroupState.STABLE
                and group.generation_id == generation
            ):
                self._revert(group, member, old_id, saved)
            parked.respond(join_error(APPEND_FAILED))

        self.rt.run(Write([group.to_record()], on_done, durable=()))  # live group: a snapshot

    def _answer_replaced(
        self, group: Group, member: Member, parked: Parked, previous_leader: str | None
    ) -> None:
        version = parked.api_version
        is_leader = member.member_id == group.leader_id
        skip = version >= 9 and is_leader
        parked.respond(
            group.join_response(
                member.member_id,
                with_members=skip,
                # v5-8: the leader id from before the replacement, so a rejoining leader does not
                # re-run the assignor; v9+: the current leader plus SkipAssignment.
                leader=(group.leader_id if version >= 9 else previous_leader) or "",
                skip_assignment=skip,
            )
        )

    def _revert(self, group: Group, member: Member, old_id: str, saved: _Saved) -> None:
        new_id = member.member_id
        group.update_member(member, saved.protocols, saved.session_timeout_ms, saved.rebalance_timeout_ms)
        member.client_id, member.client_host = saved.client_id, saved.client_host
        self.rt.timers.cancel(session_key(group.group_id, new_id))
        group.replace_static_member(new_id, old_id)
        self.rb.schedule_session(group, old_id, member.session_timeout_ms)
