"""GroupManager: the one owner of every classic consumer group and its committed offsets.

The server (kcoord/broker/apis/) calls one method per API with typed values: version
branching, defaults and the wire dicts stay at that door. Answers come back through a callback,
exactly once, synchronously or later (a parked JoinGroup / SyncGroup, a commit once durable), and
only after the records the answer depends on are durable. Every answer is a typed value (JoinGroup
and SyncGroup: `responses.JoinAnswer` / `SyncAnswer`); the server shapes it for the version.

Everything runs on one loop/thread: request methods, timer callbacks and `on_done` callbacks of the
`RecordLog` must not run concurrently (no locks inside).

Lifecycle: construct -> `apply(record)` for every replayed record -> `on_loaded()` -> requests ->
`shutdown()`. Before `on_loaded` group APIs answer COORDINATOR_LOAD_IN_PROGRESS (Heartbeat NONE,
SyncGroup REBALANCE_IN_PROGRESS, as Kafka); after `shutdown` COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.admin import (
    GROUP_TYPE_CLASSIC,
    GROUP_TYPE_CONSUMER,
    AdminHandler,
    DeleteGroupsRespond,
    GroupDescription,
    GroupListing,
)
from kcoord.coordinator.groups.config import GroupConfig
from kcoord.coordinator.groups.consumer.classic_api import ClassicMembersApi
from kcoord.coordinator.groups.consumer.model import ConsumerGroup
from kcoord.coordinator.groups.consumer.records import apply as apply_consumer_record
from kcoord.coordinator.groups.consumer.service import ConsumerGroupService, NoTopics
from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.controls import GroupControls
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.group_config_api import GroupConfigApi, apply_group_config
from kcoord.coordinator.groups.join import JoinHandler
from kcoord.coordinator.groups.join_request import JoinRequest
from kcoord.coordinator.groups.member import Respond
from kcoord.coordinator.groups.membership import LeaveEntry, MembershipHandler
from kcoord.coordinator.groups.offset_api import (
    CommitRequest,
    CommitRespond,
    FetchGroup,
    FetchRespond,
    OffsetDeleteRespond,
    OffsetDeleteTopics,
    OffsetHandler,
)
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.records import (
    GroupConfigRecord,
    GroupMetadataRecord,
    GroupTombstone,
    LogRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.groups.retention import Retention
from kcoord.coordinator.groups.runtime import Runtime, TransitionObserver
from kcoord.coordinator.groups.share import records as share_records
from kcoord.coordinator.groups.share.service import ShareGroupService
from kcoord.coordinator.groups.sync import SyncHandler, SyncRequest
from kcoord.coordinator.groups.timers import EXPIRE_OFFSETS_KEY
from kcoord.coordinator.groups.txn_offset_api import TxnCommitRequest, TxnCommitRespond, TxnOffsetHandler
from kcoord.coordinator.runtime import Clock, KeyedTimers, RecordLog, ShardPhases

__all__ = ["GroupConfig", "GroupManager", "GroupSummary", "Respond"]

log = logging.getLogger("coordinator.groups")
_UNKNOWN_MEMBER_ID = ErrorCode.UNKNOWN_MEMBER_ID


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A read-only view of one group, classic or consumer (KIP-848), for metrics and admin tooling.

    A consumer group's `generation_id` is its group epoch, `protocol_name` the server assignor it
    uses (as ConsumerGroupDescribe's AssignorName), `protocol_type` "consumer" (as ListGroups
    reports it) and `leader_id` None: the coordinator assigns."""

    group_id: str
    state: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: int
    pending_members: int
    committed_offsets: int
    group_type: str = GROUP_TYPE_CLASSIC
    assignment_epoch: int | None = None
    """A consumer group's target assignment epoch; None for a classic group."""


class GroupManager:
    """All group APIs of a classic group coordinator (Kafka's GroupCoordinator), pure and synchronous."""

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        timers: KeyedTimers,
        log: RecordLog[LogRecord],
        *,
        new_uuid: Callable[[], str] | None = None,
        topics: TopicView | None = None,
        phases: ShardPhases | None = None,
    ) -> None:
        """`new_uuid` makes member ids deterministic in tests (default: str(uuid.uuid4()));
        `topics` is what consumer-protocol groups subscribe to (default: no topics); `phases` the
        node's shards (default: a single node's one shard; a cluster node shares its table)."""
        self._rt = Runtime(config, clock, timers, log, new_uuid, phases)
        self._rt.apply = self.apply
        self._rb = Rebalancer(self._rt)
        self._join = JoinHandler(self._rt, self._rb)
        self._membership = MembershipHandler(self._rt, self._rb)
        self._sync = SyncHandler(self._rt, self._rb)
        self._offsets = OffsetHandler(self._rt, self._rb)
        self._admin = AdminHandler(self._rt, self._rb, self._offsets)
        self._txn_offsets = TxnOffsetHandler(self._rt)
        self._retention = Retention(self._rt)
        self.consumer = ConsumerGroupService(self._rt, topics if topics is not None else NoTopics(), self._rb)
        """The consumer protocol (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe."""
        self.share = ShareGroupService(self._rt, topics if topics is not None else NoTopics())
        """Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, the data side's questions."""
        self._admin.share = self.share
        self._classic_members = ClassicMembersApi(self.consumer)
        self.group_configs = GroupConfigApi(self._rt)
        """Group config resources (DescribeConfigs / the Alter APIs on type 32)."""
        self.controls = GroupControls(self._rt, self._rb, self.consumer)
        """Test controls (force a rebalance, expire a member, change settings): the server exposes
        them only with --enable-test-controls."""

    # -- lifecycle --------------------------------------------------------------------------------
    def apply(self, record: LogRecord) -> None:
        """Replay one record: storage recovery (in log order, before `on_loaded`) and the live
        write path alike (`Runtime.run`: offset records once durable, a group tombstone when it
        is written). Group snapshots are only ever applied by recovery: a live group already is
        what its snapshot says (see runtime.py)."""
        rt = self._rt
        match record:
            case OffsetCommitRecord():
                # Offsets without a group make a simple group, created by on_loaded at the end of
                # recovery (and live by the commit itself), so replay order does not matter.
                rt.offsets.put(record)
            case OffsetTombstone():
                rt.offsets.delete(record.group_id, record.topic, record.partition)
            case GroupMetadataRecord():
                rt.groups[record.group_id] = Group.from_record(record)
            case GroupTombstone():
                group = rt.groups.get(record.group_id)
                if group is not None:
                    self._rb.drop_group(group)  # Any -> Dead, timers and parked requests answered
            case TxnOffsetCommitRecord():
                rt.offsets.put_pending(record)  # its simple group: as for commits, above
            case TxnOffsetTombstone():
                rt.offsets.txn.remove_written(record)
            case GroupConfigRecord():
                apply_group_config(rt.group_configs, record)
            case _ if isinstance(record, share_records.SHARE_RECORD_CLASSES):
                share_records.apply(rt.share_groups, record)
            case _:
                apply_consumer_record(rt.consumer_groups, record)

    def on_loaded(self) -> None:
        """Recovery finished: re-arm session timers from now, schedule offset expiry, serve requests.
        A group with committed or pending transactional offsets but no record is a simple group
        (Kafka's replay of an offset record creates it)."""
        rt = self._rt
        rt.phases.loaded()
        for group_id in rt.offsets.group_ids():
            if group_id not in rt.groups and group_id not in rt.consumer_groups:
                rt.groups[group_id] = Group(group_id, None)
        max_size = rt.config.group_max_size
        for group in list(rt.groups.values()):
            for member in group.members.values():
                self._rb.schedule_session(group, member.member_id, member.session_timeout_ms)
            if max_size is not None and len(group.members) > max_size:
                self._rb.prepare_rebalance(group, "freshly-loaded group is over capacity")
        self.consumer.on_loaded()
        self.share.loaded()
        self._retention.schedule()
        log.info("groups loaded: groups=%d offsets=%d", len(rt.groups), rt.offsets.count())

    # -- cluster mode: shards of groups moving between nodes ----------------------------------------
    def shard_loaded(self, belongs: Callable[[str], bool]) -> None:
        """`on_loaded` for the groups `belongs` names, just replayed through `apply` while the
        manager serves others (cluster mode: a shard taken over; Kafka's scheduleLoadOperation)."""
        rt = self._rt
        for group_id in rt.offsets.group_ids():
            if belongs(group_id) and group_id not in rt.groups and group_id not in rt.consumer_groups:
                rt.groups[group_id] = Group(group_id, None)
        for group in [g for g in rt.groups.values() if belongs(g.group_id)]:
            for member in group.members.values():
                self._rb.schedule_session(group, member.member_id, member.session_timeout_ms)
        self.consumer.loaded(belongs)
        self.share.loaded(belongs)

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Forget the groups `gone` names: their timers stop, parked JoinGroup / SyncGroup answer
        NOT_COORDINATOR, their offsets leave memory (cluster mode: the shard moved to another
        node; Kafka's onResignation -> GroupMetadataManager.onUnloaded). Nothing is written."""
        rt = self._rt
        for group_id in [g for g in rt.groups if gone(g)]:
            group = rt.groups.pop(group_id)
            self._rb.cancel_group_timers(group)
            self._rb.fail_parked(group, ErrorCode.NOT_COORDINATOR)
        self.consumer.unload(gone)
        self.share.unload(gone)
        rt.offsets.unload(gone)
        # rt.group_configs stay: in cluster mode they are cluster-wide records every node follows
        # (group_config_api.py), not the shard's, so a node keeps them for the partitions it leads

    def shutdown(self) -> None:
        """Cancel every timer; answer parked JoinGroup/SyncGroup with NOT_COORDINATOR (retriable,
        the client rediscovers the coordinator). Later requests get COORDINATOR_NOT_AVAILABLE."""
        self._rt.phases.shut_down()
        self._rt.timers.cancel(EXPIRE_OFFSETS_KEY)
        for group in self._rt.groups.values():
            self._rb.cancel_group_timers(group)
            self._rb.fail_parked(group, ErrorCode.NOT_COORDINATOR)
        self.consumer.shutdown()
        self.share.shutdown()

    def delete_topics(self, topic_names: Iterable[str]) -> None:
        """DeleteTopics: write tombstones for every committed offset of these topics (all groups), and
        the share groups forget them (maybeCleanupShareGroupState)."""
        topic_names = list(topic_names)
        self._retention.delete_topics(topic_names)
        self.share.topics_deleted(topic_names)

    def expire_offsets(self) -> None:
        """Run one offset-retention pass now (it also runs every offsets_retention_check_interval_ms)."""
        self._retention.expire_offsets()

    # -- group membership APIs --------------------------------------------------------------------
    def join_group(self, request: JoinRequest) -> None:
        """JoinGroup (11), typed at the door (broker/apis/join_group.py). Answered at once (errors,
        MEMBER_ID_REQUIRED, unchanged follower) or when the join phase completes."""
        # Kafka's classicGroupJoin: a non-empty consumer group takes the classic member in (online
        # migration, consumer/classic_api.py); an empty one becomes a classic group.
        rt = self._rt
        if request.group_id in rt.share_groups and rt.phase_error(request.group_id) is None:
            # GroupMetadataManager.classicGroupJoin: a group of another type than classic or consumer
            request.fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
            return
        consumer_group = rt.consumer_groups.get(request.group_id)
        if consumer_group is not None and rt.phase_error(request.group_id) is None:
            if consumer_group.members:
                cfg = rt.config
                if (
                    not cfg.group_min_session_timeout_ms
                    <= request.session_timeout_ms
                    <= cfg.group_max_session_timeout_ms
                ):
                    request.fail(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id)
                    return
                self._classic_members.join(request)
                return
            self.consumer.release_for_classic(request.group_id)
        self._join.handle(request)

    def sync_group(self, request: SyncRequest) -> None:
        """SyncGroup (14), typed at the door (broker/apis/sync_group.py). In CompletingRebalance
        parked until the leader's assignment is durable."""
        if request.group_id in self._rt.consumer_groups and self._rt.phase_error(request.group_id) is None:
            self._classic_members.sync(request)  # a classic member of a consumer group
            return
        self._sync.handle(request)

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        """Heartbeat (12), typed at the door (broker/apis/heartbeat.py): the error, at once."""
        error = self._membership.heartbeat(group_id, generation_id, member_id, group_instance_id)
        if error is _UNKNOWN_MEMBER_ID and group_id in self._rt.consumer_groups:
            # a classic member of a consumer group (looked up only off the classic fast path; a
            # module constant, since each `ErrorCode.X` lookup costs ~90 ns on the hottest request)
            return self._classic_members.heartbeat(group_id, generation_id, member_id, group_instance_id)
        return error

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[LeaveEntry]]:
        """LeaveGroup (13), typed at the door (broker/apis/leave_group.py): the group error and one
        (member id, instance id, error) per member, at once."""
        if group_id in self._rt.consumer_groups and self._rt.phase_error(group_id) is None:
            return ErrorCode.NONE, self._classic_members.leave(group_id, members)
        return self._membership.leave_group(group_id, members)

    # -- offsets ----------------------------------------------------------------------------------
    def offset_commit(self, request: CommitRequest, respond: CommitRespond) -> None:
        """OffsetCommit (8), typed at the door (broker/apis/offset_commit.py, which answers unknown
        topics and partitions itself). Answered once the commit records are durable."""
        write = self._offsets.commit(request, respond)
        if write is not None:
            self._rt.run_commit(write)

    def offset_fetch(
        self,
        groups: Sequence[FetchGroup],
        require_stable: bool,
        respond: FetchRespond,
        members: Sequence[tuple[str | None, int]] | None = None,
    ) -> None:
        """OffsetFetch (9), typed at the door (broker/apis/offset_fetch.py). Answered at once, or
        with `require_stable` once the writes of the groups' offsets in flight before it (commits,
        tombstones) have settled. `members`: v9's member id and epoch per group (checked for
        consumer-protocol groups)."""
        self._offsets.fetch(groups, require_stable, respond, members)

    # -- transactional offsets (KIP-98, KIP-447) ----------------------------------------------------
    def txn_offset_commit(self, request: TxnCommitRequest, done: TxnCommitRespond) -> None:
        """TxnOffsetCommit (28), typed at the door (which answers unknown topics and partitions, and
        the transaction coordinator's check, itself). Per-partition errors once the pending offsets
        are durable; they stay invisible to OffsetFetch until the producer's marker."""
        self._txn_offsets.commit(request, done)

    def complete_transaction(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        done: Callable[[BaseException | None], None],
    ) -> None:
        """The transaction marker for the group coordinator (every `__consumer_offsets` partition
        of the transaction: one call covers all the producer's groups). COMMIT applies its pending
        offsets (each unless a commit written after it is committed), ABORT drops them; `done(None)`
        once durable, `done(error)` if not (a storage fault, or `MarkerRejected`): retry."""
        self._txn_offsets.complete(producer_id, producer_epoch, commit, done)

    def has_pending_transactional_offsets(
        self, group_id: str, topic: str | None = None, partition: int | None = None
    ) -> bool:
        """Kafka's hasPendingTransactionalOffsets for one partition; for a whole group (topic None):
        some transaction is open in it (openTransactionsByGroup)."""
        txn = self._rt.offsets.txn
        if topic is None or partition is None:
            return txn.has_open(group_id)
        return txn.has_pending(group_id, topic, partition)

    def pending_transactional_offsets(
        self, producer_id: int
    ) -> dict[tuple[str, str, int], TxnOffsetCommitRecord]:
        """The producer's pending offsets by (group, topic, partition): tests and introspection."""
        return self._rt.offsets.txn.pending_of(producer_id)

    def offset_delete(self, group_id: str, topics: OffsetDeleteTopics, respond: OffsetDeleteRespond) -> None:
        """OffsetDelete (47): typed at the door (broker/apis/offset_delete.py), which answers unknown
        topics and partitions itself. Answered once the tombstones are durable."""
        write = self._offsets.delete(group_id, topics, respond)
        if write is not None:
            self._rt.run(write)

    # -- admin ------------------------------------------------------------------------------------
    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """DescribeGroups (15): one description per id, typed at the door
        (broker/apis/describe_groups.py, which builds the version's response); answered at once."""
        return self._admin.describe_groups(group_ids)

    def list_groups(
        self, states: Collection[str], types: Collection[str]
    ) -> tuple[ErrorCode, list[GroupListing]]:
        """ListGroups (16): lower-case state and type filters (empty: all), typed at the door
        (broker/apis/list_groups.py); answered at once."""
        return self._admin.list_groups(states, types)

    def delete_groups(self, group_ids: Sequence[str], respond: DeleteGroupsRespond) -> None:
        """DeleteGroups (42): distinct group ids (typed at the door, broker/apis/delete_groups.py);
        answered once the tombstones are durable."""
        write = self._admin.delete_groups(group_ids, respond)
        if write is not None:
            self._rt.run(write)

    # -- introspection ----------------------------------------------------------------------------
    def groups(self) -> list[GroupSummary]:
        """A snapshot of every group, classic then consumer (metrics, admin, tests)."""
        rt = self._rt
        classic = [
            GroupSummary(
                group_id=g.group_id,
                state=g.state.value,
                generation_id=g.generation_id,
                protocol_type=g.protocol_type,
                protocol_name=g.protocol_name,
                leader_id=g.leader_id,
                members=len(g.members),
                pending_members=len(g.pending_members),
                committed_offsets=len(rt.offsets.of_group(g.group_id)),
            )
            for g in rt.groups.values()
        ]
        return classic + [self._consumer_summary(g) for g in rt.consumer_groups.values()]

    def observe_transitions(self, observer: TransitionObserver | None) -> None:
        """Tell `observer` about every state transition from now on (metrics)."""
        self._rt.observer = observer

    @property
    def config(self) -> GroupConfig:
        """The settings in force (test controls may change some at runtime)."""
        return self._rt.config

    def all_groups(self) -> list[Group]:
        """The live classic Group objects (read them, never mutate them): the HTTP inspector and
        tests; consumer-protocol groups are `all_consumer_groups()`."""
        return list(self._rt.groups.values())

    def group(self, group_id: str) -> Group | None:
        """The live Group object (read it, never mutate it): tests and debugging."""
        return self._rt.group(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetCommitRecord]:
        """The durable committed offsets of one group, keyed by (topic, partition)."""
        return dict(self._rt.offsets.of_group(group_id))

    # -- consumer-protocol groups, read-only (KIP-848) --------------------------------------------
    def all_consumer_groups(self) -> list[ConsumerGroup]:
        """The live consumer-protocol groups (read them, never mutate them): metrics and the HTTP
        inspector. `all_groups()` holds the classic ones; an id names one kind or the other."""
        return list(self._rt.consumer_groups.values())

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The live consumer-protocol group (read it, never mutate it)."""
        return self._rt.consumer_groups.get(group_id)

    def consumer_assignor(self, group: ConsumerGroup) -> str:
        """The server assignor the group uses, as ConsumerGroupDescribe names it."""
        return group.preferred_assignor(self._rt.config.consumer_assignors[0])

    def _consumer_summary(self, group: ConsumerGroup) -> GroupSummary:
        return GroupSummary(
            group_id=group.group_id,
            state=group.state.value,
            generation_id=group.group_epoch,
            protocol_type=GROUP_TYPE_CONSUMER,  # ListGroups' protocol type of a consumer group
            protocol_name=self.consumer_assignor(group),
            leader_id=None,
            members=len(group.members),
            pending_members=0,
            committed_offsets=len(self._rt.offsets.of_group(group.group_id)),
            group_type=GROUP_TYPE_CONSUMER,
            assignment_epoch=group.assignment_epoch,
        )
