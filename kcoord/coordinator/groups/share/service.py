"""The share groups' coordinator (KIP-932): heartbeats, session timers, describe, the data side's
questions, and the port through which it tells the data side that members left.

As for consumer groups (consumer/service.py), a heartbeat's records are applied when written through
the replay path (`Runtime.apply`), the answer waits until they are durable, and a failed write puts
the group back as it was. The tenant shares the groups' name space, runtime and timers.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Protocol

from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group_configs import effective_int
from kcoord.coordinator.groups.records import LogRecord
from kcoord.coordinator.groups.runtime import Phase, Runtime, Undo, Write
from kcoord.coordinator.groups.share.describe import (
    ShareGroupDescription,
    describe_share_groups,
    not_a_share_group,
)
from kcoord.coordinator.groups.share.heartbeat import (
    Refused,
    ShareHeartbeatAnswer,
    ShareHeartbeatPlan,
    ShareHeartbeatRequest,
    ShareHeartbeatSettings,
    fence_records,
    plan_heartbeat,
    plan_leave,
    validate,
)
from kcoord.coordinator.groups.share.model import (
    ShareGroup,
    ShareGroupState,
    TopicPartitionsInfo,
    merged,
    without,
)
from kcoord.coordinator.groups.share.records import (
    ShareGroupEpoch,
    ShareRecord,
    ShareStatePartitions,
    ShareTargetEpoch,
)
from kcoord.coordinator.groups.share.state_partitions import (
    all_deleting,
    cleanup_deleted_topics,
    complete_offsets_deletion,
    offsets_altered,
    start_offsets_deletion,
)

__all__ = ["ShareGroupService", "ShareHeartbeatRespond", "ShareMemberListener", "share_session_key"]

log = logging.getLogger("coordinator.groups.share")

ShareHeartbeatRespond = Callable[[ShareHeartbeatAnswer], None]


class ShareMemberListener(Protocol):
    """The data side (the share-partition tenant), told once a change is durable."""

    def member_left(self, group_id: str, member_id: str) -> None:
        """The member left or was fenced: what it acquired is available again."""
        ...

    def group_deleted(self, group_id: str) -> None:
        """The group was deleted: its share partitions' state goes too."""
        ...

    def topics_deleted(self, topic_ids: Collection[uuid.UUID]) -> None:
        """The topics are being deleted: every group's share state of them goes (Kafka's share
        coordinator hears of it on its own: ShareCoordinatorService.onTopicsDeleted)."""
        ...


def share_session_key(group_id: str, member_id: str) -> str:
    """A share member's session (Kafka's groupSessionTimeoutKey for share groups)."""
    return f"share-session:{group_id}:{member_id}"


class ShareGroupService:
    def __init__(self, rt: Runtime, topics: TopicView) -> None:
        self.rt = rt
        self.topics = topics
        self.listener: ShareMemberListener | None = None
        """Plugged in by the wiring (SharePartitions.release_member / delete)."""
        self._initializing: set[str] = set()
        """Groups whose share partitions' initialization is being written."""

    # -- ShareGroupHeartbeat ----------------------------------------------------------------------
    def heartbeat(self, request: ShareHeartbeatRequest, respond: ShareHeartbeatRespond) -> None:
        """Answered at once (an error, or nothing to write) or once the records are durable."""
        try:
            plan = self._plan(request)
        except Refused as refused:
            respond(ShareHeartbeatAnswer(refused.code, refused.message or None))
            return
        group_id, member_id = request.group_id, request.member_id
        if plan.member is None:
            self.rt.timers.cancel(share_session_key(group_id, member_id))
        else:
            self._schedule_session(group_id, member_id)
        if not plan.records:
            respond(plan.answer)
            self._maybe_initialize(group_id)
            return
        answer, left = plan.answer, plan.member is None

        def done(exc: BaseException | None) -> None:
            if exc is None and left:
                self._tell_member_left(group_id, member_id)
            respond(answer if exc is None else ShareHeartbeatAnswer(APPEND_FAILED, "The write failed."))
            if exc is None:
                self._maybe_initialize(group_id)

        self._write(group_id, plan.records, done)

    def _plan(self, request: ShareHeartbeatRequest) -> ShareHeartbeatPlan:
        """GroupCoordinatorService's checks (not active, the request's validity, then the shard's
        loading), then GroupMetadataManager.shareGroupHeartbeat or shareGroupLeave; Refused if refused."""
        rt = self.rt
        if rt.phases.phase(request.group_id) is Phase.SHUT_DOWN:
            raise Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
        validate(request)
        error = rt.phase_error(request.group_id)
        if error is not None:
            raise Refused(error, "")
        group = self._group_for(request)
        if request.member_epoch < 0:
            return plan_leave(group, request, self.topics)
        return plan_heartbeat(group, request, self.topics, self._settings(request.group_id))

    def _group_for(self, request: ShareHeartbeatRequest) -> ShareGroup:
        """Kafka's getOrMaybeCreateShareGroup: created only by a join (epoch 0), never in place of
        a classic or consumer group (one id, one type)."""
        group_id = request.group_id
        group = self.rt.share_groups.get(group_id)
        if group is not None:
            return group
        if (other := self.other_type(group_id)) is not None:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, other)
        if request.member_epoch < 0:  # shareGroupLeave looks the group up with group(groupId)
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if request.member_epoch != 0:  # getOrMaybeCreateShareGroup(groupId, false)
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        return ShareGroup(group_id)

    def _settings(self, group_id: str) -> ShareHeartbeatSettings:
        """The group's share.heartbeat.interval.ms and share.assignment.interval.ms, else the broker's
        group.share.* settings (GroupMetadataManager.shareGroupHeartbeatIntervalMs and friends)."""
        own, config = self.rt.group_configs.get(group_id), self.rt.config
        return ShareHeartbeatSettings(
            max_size=config.share_max_size,
            heartbeat_interval_ms=effective_int(
                own, "share.heartbeat.interval.ms", config.share_heartbeat_interval_ms
            ),
            assignment_interval_ms=effective_int(
                own, "share.assignment.interval.ms", config.share_assignment_interval_ms
            ),
            now_ms=self.rt.now_ms(),
        )

    # -- writes -----------------------------------------------------------------------------------
    def _write(
        self, group_id: str, records: Sequence[ShareRecord], done: Callable[[BaseException | None], None]
    ) -> None:
        """Apply `records` now through the replay path, append them, answer through `done` once
        durable; on failure the group is put back as it was (a copy: share groups are small)."""
        groups = self.rt.share_groups
        known = groups.get(group_id)
        saved = known.copy() if known is not None else None

        def restore() -> None:
            if saved is None:
                groups.pop(group_id, None)
            elif group_id not in self.rt.groups and group_id not in self.rt.consumer_groups:
                groups[group_id] = saved

        for record in records:
            self.rt.apply(record)
        group = groups.get(group_id)
        if group is not None:
            group.checked_topics_version = self.topics.version
        self.rt.run(Write(list(records), done, durable=(), undo=[restore]))

    def fence(self, group_id: str, member_id: str, reason: str) -> None:
        """Remove a member whose session expired (Kafka's shareGroupFenceMemberOperation)."""
        if self.rt.phase_error(group_id) is not None:
            return
        group = self.rt.share_groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("group_id=%s member_id=%s fenced: %s", group_id, member_id, reason)
        self.rt.timers.cancel(share_session_key(group_id, member_id))

        def done(exc: BaseException | None) -> None:
            if exc is None:
                self._tell_member_left(group_id, member_id)
            else:
                log.error("group_id=%s member_id=%s fencing not written: %s", group_id, member_id, exc)

        self._write(group_id, fence_records(group, member_id, self.topics), done)

    def _maybe_initialize(self, group_id: str) -> None:
        """Initialize what the group has initializing, unless an initialization is in flight (a failed
        one is retried by the next heartbeat, as Kafka retries partitions left initializing)."""
        group = self.rt.share_groups.get(group_id)
        if group is not None and group.initializing and group_id not in self._initializing:
            self._initialize(group_id, dict(group.initializing))

    def _initialize(
        self, group_id: str, partitions: Mapping[uuid.UUID, TopicPartitionsInfo], bump: bool = True
    ) -> None:
        """The share partitions' state is initialized (Kafka: the persister's InitializeShareGroupState
        answered, then GroupMetadataManager.initializeShareGroupState): they move from initializing to
        initialized and the group epoch is bumped, so that the next heartbeat assigns them. On one node
        the share-partition tenant initializes a partition on its first use, so nothing is asked.
        Without `bump` (AlterShareGroupOffsets: Kafka's initializeShareGroupState writes the state
        record alone) the group epoch stays and the next heartbeat bumps it (initialized_since_epoch)."""
        group = self.rt.share_groups.get(group_id)
        if group is None or self.rt.phase_error(group_id) is not None:
            return
        initialized = merged(group.initialized, partitions)
        initializing = without(group.initializing, partitions)
        records: list[ShareRecord] = [
            ShareStatePartitions(
                group_id, tuple(initialized.values()), tuple(initializing.values()), group.deleting
            ),
        ]
        if bump:
            records.append(ShareGroupEpoch(group_id, group.group_epoch + 1, group.metadata_hash))

        def done(exc: BaseException | None) -> None:
            self._initializing.discard(group_id)
            if exc is not None:  # the next heartbeat asks again: the partitions are still initializing
                log.error("group_id=%s share partitions not initialized: %s", group_id, exc)

        self._initializing.add(group_id)
        self._write(group_id, records, done)

    def _tell_member_left(self, group_id: str, member_id: str) -> None:
        if self.listener is not None:
            self.listener.member_left(group_id, member_id)

    # -- share-partition metadata: topics deleted, share state deleted ------------------------------
    def topics_deleted(self, names: Iterable[str]) -> None:
        """DeleteTopics, called while the topics still exist (their ids are looked up here): the data side
        deletes their share state, and each share group holding them forgets them
        (GroupCoordinatorService.onMetadataUpdate -> GroupMetadataManager.maybeCleanupShareGroupState)."""
        ids = {found[0] for name in names if (found := self.topics.describe(name)) is not None}
        if ids and self.listener is not None:
            self.listener.topics_deleted(ids)
        for group_id, group in list(self.rt.share_groups.items()):
            record = cleanup_deleted_topics(group, ids) if ids else None
            if record is not None and self.rt.phase_error(group_id) is None:
                self._write(group_id, [record], _logged(group_id, "deleted topics not forgotten"))

    def start_offsets_deletion(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        """DeleteShareGroupOffsets, before the share state goes: the initialized topics move to deleting
        (sharePartitionsEligibleForOffsetDeletion); the log's order puts this before the state's
        tombstones."""
        group = self.rt.share_groups.get(group_id)
        record = start_offsets_deletion(group, topic_ids)[0] if group is not None else None
        if record is not None and self.rt.phase_error(group_id) is None:
            self._write(group_id, [record], _logged(group_id, "offsets deletion not started"))

    def alter_offsets(
        self,
        group_id: str,
        altered: Mapping[uuid.UUID, TopicPartitionsInfo],
        done: Callable[[ErrorCode | None], None],
    ) -> None:
        """AlterShareGroupOffsets' group-side write (GroupMetadataManager.alterShareGroupOffsets:
        getOrMaybeCreateShareGroup(groupId, true), then addInitializingTopicsRecords), before the share
        state is reset: a group id nobody holds becomes an empty share group, listed and described.
        `done(None)` once durable (the caller checked the id and that the group is empty), then the
        partitions are initialized as after a heartbeat; `done(error)` if the write failed."""
        record = offsets_altered(self.rt.share_groups.get(group_id), group_id, altered)
        if record is None:
            done(None)
            return

        def written(exc: BaseException | None) -> None:
            done(None if exc is None else APPEND_FAILED)
            if exc is None:  # its own partitions, even while a heartbeat's initialization is in flight
                self._initialize(group_id, altered, bump=False)

        self._write(group_id, [record], written)

    def complete_offsets_deletion(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        """The share state of these topics is deleted: they leave deleting
        (completeDeleteShareGroupOffsets)."""
        group = self.rt.share_groups.get(group_id)
        record = complete_offsets_deletion(group, topic_ids) if group is not None else None
        if record is not None and self.rt.phase_error(group_id) is None:
            self._write(group_id, [record], _logged(group_id, "offsets deletion not completed"))

    # -- deletion (DeleteGroups, through the admin handler) -----------------------------------------
    def delete_error(self, group_id: str) -> ErrorCode | None:
        """ShareGroup.validateDeleteGroup: only an empty group (NON_EMPTY_GROUP otherwise)."""
        group = self.rt.share_groups[group_id]
        return None if group.state is ShareGroupState.EMPTY else ErrorCode.NON_EMPTY_GROUP

    def delete_now(self, group_id: str, undo: list[Undo]) -> list[LogRecord]:
        """An empty share group's deleting topics, then its tombstones
        (ShareGroup.createGroupTombstoneRecords: the target's epoch, the group epoch; then its
        state-partition metadata), applied now; `undo` puts the group back if the write fails, unless
        another group took the id meanwhile."""
        groups = self.rt.share_groups
        group = groups[group_id]
        # shareGroupBuildPartitionDeleteRequest first moves every topic to deleting (Kafka writes it, asks
        # the share coordinator to delete the state, then writes the tombstones; one batch here).
        deleting = all_deleting(group, self.topics)
        records: list[LogRecord] = [
            *((deleting,) if deleting is not None else ()),
            ShareTargetEpoch(group_id, None),
            ShareGroupEpoch(group_id, None),
            ShareStatePartitions(group_id, None),
        ]

        saved = group.copy()  # the deleting record below changes the group before it goes

        def restore() -> None:
            if group_id not in groups and group_id not in self.rt.groups:
                groups[group_id] = saved

        undo.append(restore)
        for record in records:
            self.rt.apply(record)
        return records

    def deleted(self, group_id: str) -> None:
        """The deletion is durable: the data side forgets the group's share partitions."""
        if self.listener is not None:
            self.listener.group_deleted(group_id)

    # -- the data side's questions ----------------------------------------------------------------
    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.rt.share_groups.get(group_id)
        return group is not None and member_id in group.members

    def assignment(self, group_id: str, member_id: str) -> dict[uuid.UUID, frozenset[int]]:
        """The member's current assignment ({} for an unknown member or group)."""
        group = self.rt.share_groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        return dict(member.assigned) if member is not None else {}

    def group(self, group_id: str) -> ShareGroup | None:
        """The live share group (read it, never mutate it)."""
        return self.rt.share_groups.get(group_id)

    def initialized_partitions(self, group_id: str) -> list[tuple[uuid.UUID, int]]:
        """The (topic id, partition)s the group side counts as initialized, sorted (Kafka's
        GroupMetadataManager.initializedShareGroupPartitions: what DescribeShareGroupOffsets of the
        whole group lists, initializing and deleting ones left out); [] for no share group."""
        group = self.rt.share_groups.get(group_id)
        if group is None:
            return []
        return sorted((t, p) for t, info in group.initialized.items() for p in info.partitions)

    def other_type(self, group_id: str) -> str | None:
        """GROUP_ID_NOT_FOUND's message for an id holding a classic or consumer group, else None."""
        return not_a_share_group(self.rt, group_id)

    # -- timers and lifecycle ---------------------------------------------------------------------
    def _schedule_session(self, group_id: str, member_id: str) -> None:
        """The group's share.session.timeout.ms, else group.share.session.timeout.ms."""
        own = self.rt.group_configs.get(group_id)
        session_ms = effective_int(own, "share.session.timeout.ms", self.rt.config.share_session_timeout_ms)
        self.rt.timers.schedule(
            share_session_key(group_id, member_id),
            session_ms,
            lambda: self.fence(group_id, member_id, "the member session expired"),
        )

    def loaded(self, belongs: Callable[[str], bool] = lambda _: True) -> None:
        """Recovery finished (for the groups `belongs` names): every member's session starts now, and
        partitions left initializing by a stop are initialized now."""
        for group_id, group in list(self.rt.share_groups.items()):
            if belongs(group_id):
                for member_id in group.members:
                    self._schedule_session(group_id, member_id)
                self._maybe_initialize(group_id)

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Cluster mode: the groups `gone` names moved to another node: timers stop, forgotten."""
        for group_id in [g for g in self.rt.share_groups if gone(g)]:
            for member_id in self.rt.share_groups.pop(group_id).members:
                self.rt.timers.cancel(share_session_key(group_id, member_id))

    def shutdown(self) -> None:
        for group_id, group in self.rt.share_groups.items():
            for member_id in group.members:
                self.rt.timers.cancel(share_session_key(group_id, member_id))

    # -- ShareGroupDescribe -----------------------------------------------------------------------
    def describe(self, group_ids: Sequence[str]) -> list[ShareGroupDescription]:
        """One description per id, in order (GroupMetadataManager.shareGroupDescribe)."""
        return describe_share_groups(self.rt, self.topics, group_ids)


def _logged(group_id: str, what: str) -> Callable[[BaseException | None], None]:
    """A write nobody waits for: a failure is logged (the group was put back as it was)."""

    def done(exc: BaseException | None) -> None:
        if exc is not None:
            log.error("group_id=%s %s: %s", group_id, what, exc)

    return done
