"""The consumer protocol's group coordinator (KIP-848): heartbeats, timers, describe, replay.

A heartbeat's records are applied when written, through the replay path (`Runtime.apply`, the
function recovery feeds the log through), so the requests behind it on any connection see the new
epochs and owners, as Kafka's timeline state does; the answer waits until they are durable, and a
failed write restores the group exactly as it was (Kafka's CoordinatorRuntime reverts the timeline).
Consumer and classic groups share one name space, the offsets, the runtime and its timers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.describe import ConsumerGroupDescription, describe_group
from kcoord.coordinator.groups.consumer.heartbeat import (
    HeartbeatAnswer,
    HeartbeatPlan,
    HeartbeatRequest,
    Refused,
    fence_records,
    plan_heartbeat,
    plan_leave,
    validate,
)
from kcoord.coordinator.groups.consumer.migration import (
    MigrationPolicy,
    can_downgrade,
    can_upgrade,
    downgrade,
    upgrade_records,
)
from kcoord.coordinator.groups.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from kcoord.coordinator.groups.consumer.records import ConsumerGroupEpoch, ConsumerRecord, ConsumerTargetEpoch
from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group_configs import effective_int
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.records import GroupTombstone, LogRecord
from kcoord.coordinator.groups.runtime import Runtime, Undo, Write
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.timers import session_key

__all__ = ["ConsumerGroupService", "HeartbeatRespond", "NoTopics", "rebalance_timeout_key"]

log = logging.getLogger("coordinator.groups.consumer")

HeartbeatRespond = Callable[[HeartbeatAnswer], None]
_GROUP_LEVEL = (ConsumerGroupEpoch, ConsumerTargetEpoch)  # the records without a member id


def rebalance_timeout_key(group_id: str, member_id: str) -> str:
    """The time a member has to revoke partitions (Kafka's consumerGroupRebalanceTimeoutKey)."""
    return f"rebalance-timeout:{group_id}:{member_id}"


@dataclass(frozen=True, slots=True)
class NoTopics:
    """A TopicView with no topics (unit tests of the group logic that need none)."""

    version: int = 0

    def describe(self, name: str) -> None:
        return None

    def name_of(self, topic_id: object) -> None:
        return None

    def names(self) -> Sequence[str]:
        return ()


class ConsumerGroupService:
    def __init__(self, rt: Runtime, topics: TopicView, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.topics = topics
        self.rb = rebalancer
        self.join_timeouts: set[str] = set()
        """Keys of classic members' join timeouts now scheduled (Kafka schedules them if absent)."""
        """The classic groups' rebalance logic: an upgrade answers their parked requests, a
        downgrade hands them a group to rebalance."""

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest, respond: HeartbeatRespond) -> None:
        """Answered at once (an error, or nothing to write) or once the records are durable."""
        error = self.rt.phase_error(request.group_id)
        if error is not None:
            respond(HeartbeatAnswer(error))
            return
        config = self.rt.config
        undo: list[Undo] = []
        prefix: list[LogRecord] = []
        try:
            validate(request, config.consumer_assignors)
            group = self.rt.consumer_groups.get(request.group_id)
            if request.member_epoch < 0:
                plan = plan_leave(group, request, self.topics)
                if plan.member is None and group is not None and self._downgrades(group, request.member_id):
                    self._cancel_timers(request.group_id, request.member_id)
                    self._downgrade(group, request.member_id, self._answer_when_durable(plan.answer, respond))
                    return
            else:
                group = self._group_for_join(request, undo, prefix)
                plan = plan_heartbeat(
                    group,
                    request,
                    self.topics,
                    default_assignor=config.consumer_assignors[0],
                    max_size=config.consumer_max_size,
                    heartbeat_interval_ms=effective_int(  # the group's own config, else the broker's
                        self.rt.group_configs.get(request.group_id),
                        "consumer.heartbeat.interval.ms",
                        config.consumer_heartbeat_interval_ms,
                    ),
                )
        except Refused as refused:
            for restore in reversed(undo):
                restore()
            respond(HeartbeatAnswer(refused.code, refused.message))
            return
        self._after(request, plan)
        if not plan.records:
            respond(plan.answer)
            return
        self._write(
            request.group_id, plan.records, self._answer_when_durable(plan.answer, respond), undo, prefix
        )

    @staticmethod
    def _answer_when_durable(
        answer: HeartbeatAnswer, respond: HeartbeatRespond
    ) -> Callable[[BaseException | None], None]:
        def done(exc: BaseException | None) -> None:
            respond(answer if exc is None else HeartbeatAnswer(APPEND_FAILED, "The write failed."))

        return done

    def _group_for_join(
        self, request: HeartbeatRequest, undo: list[Undo], prefix: list[LogRecord]
    ) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: the consumer group, a new one, or one in place of
        an empty classic group (whose tombstone is written with the heartbeat's records; its
        offsets stay), or the upgrade of a classic group with members (migration.py)."""
        group_id = request.group_id
        group = self.rt.consumer_groups.get(group_id)
        if group is not None:
            return group
        if group_id in self.rt.share_groups:  # one id, one type (getOrMaybeCreateConsumerGroup)
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        classic = self.rt.groups.get(group_id)
        if classic is not None and request.member_epoch == 0:
            config = self.rt.config
            upgrade = classic.state is not GroupState.EMPTY
            if upgrade and not (
                MigrationPolicy(config.consumer_migration_policy).upgrades
                and can_upgrade(classic, config.consumer_max_size)
            ):
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            records = upgrade_records(classic, self.topics) if upgrade else []
            if upgrade:
                # Kafka's convertToConsumerGroup: parked requests learn of the new rebalance.
                self.rb.fail_parked(classic, ErrorCode.REBALANCE_IN_PROGRESS)
            tombstone = GroupTombstone(group_id)
            self.rt.apply_live(tombstone, undo)
            prefix.append(tombstone)
            if upgrade:
                log.info(
                    "group_id=%s upgraded from classic to consumer at epoch %d",
                    group_id,
                    classic.generation_id,
                )
                for record in records:
                    self.rt.apply(record)
                undo.append(lambda: self._forget(group_id))
                prefix.extend(records)
                upgraded = self.rt.consumer_groups[group_id]
                for member in upgraded.members.values():
                    self._schedule_session(group_id, member.member_id, member)
                return upgraded
        elif request.member_epoch != 0:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return ConsumerGroup(group_id)

    def _after(self, request: HeartbeatRequest, plan: HeartbeatPlan) -> None:
        """Timers: the session of every member that heartbeats; the rebalance timeout of a member
        asked to revoke partitions (Kafka's maybeReconcile); none for a member that left."""
        group_id = request.group_id
        timers = self.rt.timers
        member = plan.member
        if member is None:
            self._cancel_timers(group_id, request.member_id)
            return
        member_id = member.member_id
        old = self._member(group_id, member_id)
        if old is not member:  # the steady heartbeat of an unchanged member touches no other timer
            if member.member_epoch < 0:  # a static member left for a while: its session still runs
                timers.cancel(rebalance_timeout_key(group_id, member_id))
            elif member.state is MemberState.UNREVOKED_PARTITIONS:
                if old is None or old.current_assignment() != member.current_assignment():
                    self._schedule_rebalance_timeout(group_id, member)
            else:
                timers.cancel(rebalance_timeout_key(group_id, member_id))
        self._schedule_session(group_id, member_id)

    # -- writes -----------------------------------------------------------------------------------
    def _write(
        self,
        group_id: str,
        records: Sequence[ConsumerRecord],
        done: Callable[[BaseException | None], None],
        undo: list[Undo],
        prefix: Sequence[LogRecord] = (),
    ) -> None:
        """Apply `records` now through the replay path, append them (after a classic group's
        tombstone, if one was applied), answer through `done` once durable; restore on failure."""
        groups = self.rt.consumer_groups
        before = groups.get(group_id)
        restore = self._undo(group_id, before, records)
        for record in records:
            self.rt.apply(record)
        group = groups.get(group_id)
        if group is not None:
            group.checked_topics_version = self.topics.version
        undo.append(restore)
        self.rt.run(Write([*prefix, *records], done, durable=(), undo=undo))

    def _undo(self, group_id: str, before: ConsumerGroup | None, records: Sequence[ConsumerRecord]) -> Undo:
        """What restores the group as it is before `records` apply: a journal of the members they
        touch (a heartbeat: one or two), or the whole group when they make or delete it."""
        groups = self.rt.consumer_groups
        if before is not None and not any(type(r) is ConsumerGroupEpoch and r.epoch is None for r in records):
            restore_members = before.journal(
                {r.member_id for r in records if not isinstance(r, _GROUP_LEVEL)}
            )

            def restore() -> None:
                if groups.get(group_id) is before:
                    restore_members()

            return restore
        saved = before.copy() if before is not None else None

        def put_back() -> None:
            if saved is None:
                groups.pop(group_id, None)
            else:
                groups[group_id] = saved

        return put_back

    def fence(self, group_id: str, member_id: str, reason: str, epoch: int | None = None) -> None:
        """Remove a member whose session expired or who did not revoke in time (Kafka's
        consumerGroupFenceMemberOperation); a member gone, or past `epoch`, is left alone."""
        if self.rt.phase_error(group_id) is not None:  # e.g. its shard draining (cluster mode)
            return
        group = self.rt.consumer_groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or (epoch is not None and member.member_epoch != epoch):
            return
        log.info("group_id=%s member_id=%s fenced: %s", group_id, member_id, reason)
        self._cancel_timers(group_id, member_id)

        def done(exc: BaseException | None) -> None:
            if exc is not None:
                log.error("group_id=%s member_id=%s fencing not written: %s", group_id, member_id, exc)

        if self._downgrades(group, member_id):
            self._downgrade(group, member_id, done)
            return
        self._write(group_id, fence_records(group, member_id, self.topics), done, [])

    # -- online downgrade -------------------------------------------------------------------------
    def _downgrades(self, group: ConsumerGroup, leaving: str) -> bool:
        config = self.rt.config
        return MigrationPolicy(config.consumer_migration_policy).downgrades and can_downgrade(
            group, leaving, config.group_max_size
        )

    def _downgrade(
        self, group: ConsumerGroup, leaving: str, done: Callable[[BaseException | None], None]
    ) -> None:
        """The last consumer-protocol member left: the classic members go on as a classic group
        (Kafka's convertToClassicGroup: the group is put in place directly, then rebalanced)."""
        group_id = group.group_id
        tombstones, classic = downgrade(group, leaving, self.topics, self.rt.now_ms())
        log.info(
            "group_id=%s downgraded from consumer to classic at generation %d",
            group_id,
            classic.generation_id,
        )
        for member_id in group.members:
            self._cancel_timers(group_id, member_id)
        saved = group.copy()

        def restore() -> None:
            if self.rt.groups.get(group_id) is classic:
                self.rb.cancel_group_timers(classic)
                del self.rt.groups[group_id]
            if group_id not in self.rt.groups:
                self.rt.consumer_groups[group_id] = saved

        for record in tombstones:
            self.rt.apply(record)
        self.rt.groups[group_id] = classic
        for member in classic.members.values():
            self.rb.schedule_session(classic, member.member_id, member.session_timeout_ms)
        written: list[LogRecord] = [*tombstones, classic.to_record()]
        self.rb.prepare_rebalance(classic, "downgrade of the group from the consumer to the classic protocol")
        self.rt.run(Write(written, done, durable=(), undo=[restore]))

    def _forget(self, group_id: str) -> None:
        self.rt.consumer_groups.pop(group_id, None)

    def release_for_classic(self, group_id: str) -> bool:
        """Delete an empty consumer group so a classic group can take its id (Kafka's
        maybeDeleteEmptyConsumerGroup: its tombstones, applied now); False if it has members."""
        group = self.rt.consumer_groups[group_id]
        if group.members:
            return False
        records: list[ConsumerRecord] = [
            ConsumerTargetEpoch(group_id, None),
            ConsumerGroupEpoch(group_id, None),
        ]

        def done(exc: BaseException | None) -> None:
            if exc is not None:
                log.error("group_id=%s consumer group deletion not written: %s", group_id, exc)

        self._write(group_id, records, done, [])
        return True

    # -- timers -----------------------------------------------------------------------------------
    def _schedule_session(self, group_id: str, member_id: str, member: ConsumerMember | None = None) -> None:
        """A classic member's own session timeout, else the group's consumer.session.timeout.ms, else
        group.consumer.session.timeout.ms (GroupMetadataManager.consumerGroupSessionTimeoutMs)."""
        classic = member.classic if member is not None else None
        own = self.rt.group_configs.get(group_id)
        session_ms = effective_int(
            own, "consumer.session.timeout.ms", self.rt.config.consumer_session_timeout_ms
        )
        self.rt.timers.schedule(
            session_key(group_id, member_id),
            classic.session_timeout_ms if classic is not None else session_ms,
            lambda: self.fence(group_id, member_id, "the member session expired"),
        )

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerMember) -> None:
        member_id, epoch = member.member_id, member.member_epoch
        self.rt.timers.schedule(
            rebalance_timeout_key(group_id, member_id),
            max(member.rebalance_timeout_ms, 0),
            lambda: self.fence(
                group_id, member_id, f"it failed to revoke its partitions from epoch {epoch} in time", epoch
            ),
        )

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        """Kafka's cancelTimers: session, rebalance, and a classic member's join and sync timeouts."""
        timers = self.rt.timers
        join_key = f"consumer-join:{group_id}:{member_id}"  # classic_api.join_timeout_key
        self.join_timeouts.discard(join_key)
        for key in (
            session_key(group_id, member_id),
            rebalance_timeout_key(group_id, member_id),
            join_key,
            f"consumer-sync:{group_id}:{member_id}",  # classic_api.sync_timeout_key
        ):
            timers.cancel(key)

    def _member(self, group_id: str, member_id: str) -> ConsumerMember | None:
        group = self.rt.consumer_groups.get(group_id)
        return group.members.get(member_id) if group is not None else None

    # -- lifecycle --------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        """Recovery finished: every member's session starts now, and so does the rebalance
        timeout of every member still asked to revoke (Kafka re-arms timers on load)."""
        for group_id, group in self.rt.consumer_groups.items():
            for member in group.members.values():
                self._schedule_session(group_id, member.member_id, member)
                if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                    self._schedule_rebalance_timeout(group_id, member)

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Cluster mode: the groups `gone` names moved to another node: their timers stop and they
        are forgotten (Kafka's onResignation unloads the partition's groups)."""
        for group_id in [g for g in self.rt.consumer_groups if gone(g)]:
            for member_id in self.rt.consumer_groups.pop(group_id).members:
                self._cancel_timers(group_id, member_id)

    def loaded(self, belongs: Callable[[str], bool]) -> None:
        """Cluster mode: `on_loaded` for the groups of one shard just loaded."""
        for group_id, group in self.rt.consumer_groups.items():
            if not belongs(group_id):
                continue
            for member in group.members.values():
                self._schedule_session(group_id, member.member_id, member)
                if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                    self._schedule_rebalance_timeout(group_id, member)

    def shutdown(self) -> None:
        for group_id, group in self.rt.consumer_groups.items():
            for member_id in group.members:
                self._cancel_timers(group_id, member_id)

    # -- ConsumerGroupDescribe --------------------------------------------------------------------
    def describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescription]:
        """One description per id, in order; a missing or classic group is GROUP_ID_NOT_FOUND."""
        out = []
        for group_id in group_ids:
            group = self.rt.consumer_groups.get(group_id)
            error = self.rt.phase_error(group_id)
            if error is not None:
                out.append(ConsumerGroupDescription(group_id, error))
            elif group is None:
                message = (
                    f"Group {group_id} is not a consumer group."
                    if group_id in self.rt.groups
                    else f"Group {group_id} not found."
                )
                out.append(ConsumerGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
            else:
                out.append(describe_group(group, self.topics, self.rt.config.consumer_assignors[0]))
        return out
