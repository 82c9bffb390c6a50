"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup from classic-protocol members of a consumer group
(KIP-848 online migration): the entry points GroupManager sends them to when the group id names a
consumer group (classic_members.py decides; Kafka's classicGroup*ToConsumerGroup)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kcoord.coordinator.groups.consumer.classic_members import (
    CONSUMER_PROTOCOL_TYPE,
    classic_member,
    encode_member_assignment,
    plan_classic_join,
    rebalance_needed,
    supports_classic_protocols,
)
from kcoord.coordinator.groups.consumer.heartbeat import Refused, remove_member_records, subscribed_names_of
from kcoord.coordinator.groups.consumer.model import MemberState
from kcoord.coordinator.groups.consumer.records import ConsumerGroupEpoch, ConsumerRecord
from kcoord.coordinator.groups.consumer.service import ConsumerGroupService
from kcoord.coordinator.groups.consumer.topics import metadata_hash
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.membership import LeaveEntry
from kcoord.coordinator.groups.responses import JoinAnswer, SyncAnswer, join_error
from kcoord.coordinator.groups.sync import SyncRequest

__all__ = ["ClassicMembersApi", "join_timeout_key", "sync_timeout_key"]

log = logging.getLogger("coordinator.groups.consumer")


def join_timeout_key(group_id: str, member_id: str) -> str:
    """A classic member asked to rejoin must do so within its rebalance timeout (consumerGroupJoinKey)."""
    return f"consumer-join:{group_id}:{member_id}"


def sync_timeout_key(group_id: str, member_id: str) -> str:
    """A classic member that joined must sync within its rebalance timeout (consumerGroupSyncKey)."""
    return f"consumer-sync:{group_id}:{member_id}"


class ClassicMembersApi:
    def __init__(self, service: ConsumerGroupService) -> None:
        self.service = service
        self.rt = service.rt

    # -- JoinGroup --------------------------------------------------------------------------------
    def join(self, r: JoinRequest) -> None:
        """Kafka's classicGroupJoinToConsumerGroup; the caller made the entry checks."""
        rt, service = self.rt, self.service
        group = rt.consumer_groups[r.group_id]
        config = rt.config
        member_id = r.member_id or rt.new_member_id(r.client_id)
        max_size = config.consumer_max_size
        if max_size is not None and len(group.members) >= max_size and member_id not in group.members:
            r.fail(ErrorCode.GROUP_MAX_SIZE_REACHED, r.member_id)
            return
        names = [name for name, _ in r.protocols]
        if not supports_classic_protocols(group, r.protocol_type, names):
            r.fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, r.member_id)
            return
        if not r.member_id and r.version >= 4 and r.group_instance_id is None:
            r.fail(ErrorCode.MEMBER_ID_REQUIRED, member_id)  # KIP-394; Kafka keeps no pending list here
            return
        try:
            plan = plan_classic_join(
                group, member_id, r.group_instance_id, r.session_timeout_ms, r.rebalance_timeout_ms,
                r.protocols, (r.client_id, r.client_host), service.topics, config.consumer_assignors[0],
                r.describable,
            )  # fmt: skip
        except Refused as refused:
            r.fail(refused.code, r.member_id)
            return
        member = plan.member
        answer = JoinAnswer(
            ErrorCode.NONE,
            generation_id=member.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=r.protocols[0][0],
            leader="",  # the coordinator assigns: nobody leads
            member_id=member.member_id,
        )
        group_id = r.group_id

        def done(exc: BaseException | None) -> None:
            if exc is not None:
                r.respond(join_error(APPEND_FAILED, r.member_id))
                return
            self._cancel_join_timeout(group_id, member.member_id)
            service._schedule_session(group_id, member.member_id, member)
            rt.timers.schedule(
                sync_timeout_key(group_id, member.member_id),
                max(r.rebalance_timeout_ms, 0),
                lambda: service.fence(group_id, member.member_id, "the member failed to sync within timeout"),
            )
            r.respond(answer)

        if plan.records:
            service._write(group_id, plan.records, done, [])
        else:
            done(None)

    # -- SyncGroup --------------------------------------------------------------------------------
    def sync(self, r: SyncRequest) -> None:
        """Kafka's classicGroupSyncToConsumerGroup: the member's current partitions, once it caught up."""
        group = self.rt.consumer_groups[r.group_id]
        member, error = classic_member(group, r.member_id, r.group_instance_id)
        if member is None or error is not None:
            r.parked.respond(SyncAnswer(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        assert member.classic is not None
        protocol_name = member.classic.supported_protocols[0][0]
        if r.generation_id != member.member_epoch:
            r.parked.respond(SyncAnswer(ErrorCode.ILLEGAL_GENERATION))
            return
        if r.protocol is not None and r.protocol != (CONSUMER_PROTOCOL_TYPE, protocol_name):
            r.parked.respond(SyncAnswer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            # Kafka's throwIfRebalanceInProgress: rejoin to catch up, unless it is revoking
            self._schedule_join_timeout(r.group_id, member.member_id, member.rebalance_timeout_ms)
            r.parked.respond(SyncAnswer(ErrorCode.REBALANCE_IN_PROGRESS))
            return
        self.rt.timers.cancel(sync_timeout_key(r.group_id, member.member_id))
        self.service._schedule_session(r.group_id, member.member_id, member)
        assignment = encode_member_assignment(member, self.service.topics)
        r.parked.respond(SyncAnswer(ErrorCode.NONE, CONSUMER_PROTOCOL_TYPE, protocol_name, assignment))

    # -- Heartbeat --------------------------------------------------------------------------------
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        """Kafka's classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when it must rejoin."""
        group = self.rt.consumer_groups[group_id]
        member, error = classic_member(group, member_id, instance_id)
        if member is None or error is not None:
            return error or ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self.service._schedule_session(group_id, member.member_id, member)
        if rebalance_needed(group, member):
            self._schedule_join_timeout(group_id, member.member_id, member.rebalance_timeout_ms)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup -------------------------------------------------------------------------------
    def leave(self, group_id: str, members: Sequence[tuple[str, str | None]]) -> list[LeaveEntry]:
        """Kafka's classicGroupLeaveToConsumerGroup: each classic member removed, one epoch bump."""
        group = self.rt.consumer_groups[group_id]
        records: list[ConsumerRecord] = []
        entries: list[LeaveEntry] = []
        removed: list[str] = []
        for member_id, instance_id in members:
            if instance_id is not None and not member_id:  # admin removal by instance id (KIP-345)
                static_id = group.static_members.get(instance_id)
                member_id = static_id or ""
                member, error = classic_member(group, member_id, instance_id)
            else:
                member, error = classic_member(group, member_id, instance_id)
            if member is None or error is not None:
                entries.append((member_id, instance_id, error or ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            remove_member_records(group_id, member.member_id, records)
            self.service._cancel_timers(group_id, member.member_id)
            removed.append(member.member_id)
            entries.append((member.member_id, instance_id, ErrorCode.NONE))
        if records:
            remaining = [m for m in group.members.values() if m.member_id not in removed]
            names = subscribed_names_of(remaining, self.service.topics)
            records.append(
                ConsumerGroupEpoch(group_id, group.group_epoch + 1, metadata_hash(names, self.service.topics))
            )
            log.info("group_id=%s classic members %s left", group_id, removed)

            def done(exc: BaseException | None) -> None:
                if exc is not None:
                    log.error("group_id=%s leave not written: %s", group_id, exc)

            self.service._write(group_id, records, done, [])
        return entries

    # -- timers -----------------------------------------------------------------------------------
    def _schedule_join_timeout(self, group_id: str, member_id: str, rebalance_timeout_ms: int) -> None:
        """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent."""
        key = join_timeout_key(group_id, member_id)
        pending = self.service.join_timeouts
        if key in pending:
            return
        pending.add(key)

        def expired() -> None:
            pending.discard(key)
            self.service.fence(
                group_id, member_id, "the classic member failed to join within the rebalance timeout"
            )

        self.rt.timers.schedule(key, max(rebalance_timeout_ms, 0), expired)

    def _cancel_join_timeout(self, group_id: str, member_id: str) -> None:
        key = join_timeout_key(group_id, member_id)
        self.service.join_timeouts.discard(key)
        self.rt.timers.cancel(key)
