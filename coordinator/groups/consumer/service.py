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

from coordinator.groups.consumer.describe import ConsumerGroupDescription, describe_group
from coordinator.groups.consumer.heartbeat import (
    HeartbeatAnswer,
    HeartbeatPlan,
    HeartbeatRequest,
    Refused,
    fence_records,
    plan_heartbeat,
    plan_leave,
    validate,
)
from coordinator.groups.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from coordinator.groups.consumer.records import ConsumerGroupEpoch, ConsumerRecord, ConsumerTargetEpoch
from coordinator.groups.consumer.topics import TopicView
from coordinator.groups.errors import APPEND_FAILED, ErrorCode
from coordinator.groups.records import GroupTombstone, LogRecord
from coordinator.groups.runtime import Runtime, Undo, Write
from coordinator.groups.state import GroupState
from coordinator.groups.timers import session_key

__all__ = ["ConsumerGroupService", "HeartbeatRespond", "NoTopics", "rebalance_timeout_key"]

log = logging.getLogger("coordinator.groups.consumer")

HeartbeatRespond = Callable[[HeartbeatAnswer], None]


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
    def __init__(self, rt: Runtime, topics: TopicView) -> None:
        self.rt = rt
        self.topics = topics

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest, respond: HeartbeatRespond) -> None:
        """Answered at once (an error, or nothing to write) or once the records are durable."""
        error = self.rt.phase_error()
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
            else:
                group = self._group_for_join(request, undo, prefix)
                plan = plan_heartbeat(
                    group,
                    request,
                    self.topics,
                    default_assignor=config.consumer_assignors[0],
                    max_size=config.consumer_max_size,
                    heartbeat_interval_ms=config.consumer_heartbeat_interval_ms,
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
        answer = plan.answer

        def done(exc: BaseException | None) -> None:
            respond(answer if exc is None else HeartbeatAnswer(APPEND_FAILED, "The write failed."))

        self._write(request.group_id, plan.records, done, undo, prefix)

    def _group_for_join(
        self, request: HeartbeatRequest, undo: list[Undo], prefix: list[LogRecord]
    ) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: the consumer group, a new one, or one in place of
        an empty classic group (whose tombstone is written with the heartbeat's records; its
        offsets stay). A classic group with members is not converted: online migration between
        the protocols is not served yet."""
        group_id = request.group_id
        group = self.rt.consumer_groups.get(group_id)
        if group is not None:
            return group
        classic = self.rt.groups.get(group_id)
        if classic is not None and request.member_epoch == 0:
            if classic.state is not GroupState.EMPTY:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            tombstone = GroupTombstone(group_id)
            self.rt.apply_live(tombstone, undo)
            prefix.append(tombstone)
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
        if member.member_epoch < 0:  # a static member left for a while: its session still runs
            timers.cancel(rebalance_timeout_key(group_id, member_id))
        elif member.state is MemberState.UNREVOKED_PARTITIONS:
            old = self._member(group_id, member_id)
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
        saved = before.copy() if before is not None else None

        def restore() -> None:
            if saved is None:
                groups.pop(group_id, None)
            else:
                groups[group_id] = saved

        for record in records:
            self.rt.apply(record)
        group = groups.get(group_id)
        if group is not None:
            group.checked_topics_version = self.topics.version
        undo.append(restore)
        self.rt.run(Write([*prefix, *records], done, durable=(), undo=undo))

    def fence(self, group_id: str, member_id: str, reason: str, epoch: int | None = None) -> None:
        """Remove a member whose session expired or who did not revoke in time (Kafka's
        consumerGroupFenceMemberOperation); a member gone, or past `epoch`, is left alone."""
        if self.rt.phase_error() is not None:
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

        self._write(group_id, fence_records(group, member_id, self.topics), done, [])

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
    def _schedule_session(self, group_id: str, member_id: str) -> None:
        self.rt.timers.schedule(
            session_key(group_id, member_id),
            self.rt.config.consumer_session_timeout_ms,
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
        self.rt.timers.cancel(session_key(group_id, member_id))
        self.rt.timers.cancel(rebalance_timeout_key(group_id, member_id))

    def _member(self, group_id: str, member_id: str) -> ConsumerMember | None:
        group = self.rt.consumer_groups.get(group_id)
        return group.members.get(member_id) if group is not None else None

    # -- lifecycle --------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        """Recovery finished: every member's session starts now, and so does the rebalance
        timeout of every member still asked to revoke (Kafka re-arms timers on load)."""
        for group_id, group in self.rt.consumer_groups.items():
            for member in group.members.values():
                self._schedule_session(group_id, member.member_id)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group_id, member)

    def shutdown(self) -> None:
        for group_id, group in self.rt.consumer_groups.items():
            for member_id in group.members:
                self._cancel_timers(group_id, member_id)

    # -- ConsumerGroupDescribe --------------------------------------------------------------------
    def describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescription]:
        """One description per id, in order; a missing or classic group is GROUP_ID_NOT_FOUND."""
        error = self.rt.phase_error()
        out = []
        for group_id in group_ids:
            group = self.rt.consumer_groups.get(group_id)
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
