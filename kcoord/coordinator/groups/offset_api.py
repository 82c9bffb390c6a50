"""OffsetCommit (8) v0-9, OffsetFetch (9) v0-9, OffsetDelete (47) v0 (Kafka's OffsetMetadataManager).

A commit's response is sent only after its records are durable; offsets become visible to fetches
at the same moment (`Runtime.run` applies them once durable, through the same path as recovery).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcoord.coordinator.groups.consumer.model import ConsumerGroup
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.records import OffsetCommitRecord, OffsetTombstone
from kcoord.coordinator.groups.runtime import Runtime, Undo, Write
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE

__all__ = [
    "CommitErrors",
    "CommitRequest",
    "CommitRespond",
    "FetchGroup",
    "FetchRespond",
    "FetchResult",
    "FetchTopics",
    "FetchedOffset",
    "OffsetDeleteRespond",
    "OffsetDeleteTopics",
    "OffsetHandler",
    "PartitionCommit",
]


PartitionCommit = tuple[int, int, int, str, int]
"""One partition's commit: (partition, offset, leader epoch (-1 = none, before v6), metadata (null is
stored as ""), commit timestamp (-1 = now; only v1 carries one)). A plain tuple: a commit's hot path
builds one per partition, and a NamedTuple or dataclass costs 6-10 times as much to make."""


@dataclass(slots=True)
class CommitRequest:
    """An OffsetCommit request typed at the door (broker/apis/offset_commit.py), which answers
    partitions the broker does not know itself and resolves what depends on the version. Not
    frozen: a frozen dataclass costs ~0.5 us to make, a few per cent of a commit."""

    group_id: str
    generation_id: int  # -1 = a commit from outside the group (v0, admin tools, assign() consumers)
    member_id: str
    group_instance_id: str | None
    retention_ms: int  # -1 = the broker's retention; only v2-4 carry an explicit one (KIP-211)
    unknown_group_error: ErrorCode  # for generation >= 0 to a missing group: v9+ GROUP_ID_NOT_FOUND
    topics: Sequence[tuple[str, Sequence[PartitionCommit]]]
    api_version: int = 9  # consumer-protocol members must commit with v9+ (KIP-848)


FetchTopics = Sequence[tuple[str, Sequence[int]]]
FetchGroup = tuple[str, FetchTopics | None]
"""One group of an OffsetFetch request: (group id, (topic, partitions) pairs or None for all)."""
FetchedOffset = OffsetCommitRecord | ErrorCode | None
"""One partition's answer: its committed offset, None (none), or ErrorCode.UNSTABLE_OFFSET_COMMIT
(a require_stable fetch of a partition with a pending transactional offset)."""
FetchResult = tuple[str, ErrorCode, list[tuple[str, list[tuple[int, FetchedOffset]]]]]
"""One group's answer: (group id, group error, per topic (partition, FetchedOffset))."""
FetchRespond = Callable[[list[FetchResult]], None]

CommitErrors = dict[tuple[str, int], ErrorCode]
CommitRespond = Callable[[ErrorCode, CommitErrors], None]
"""OffsetCommit's answer: every requested partition gets the first error, except those in the
map of (topic, partition) -> error (OFFSET_METADATA_TOO_LARGE). Not a list per partition: a commit
is answered in the shape the server builds its response from directly."""

OffsetDeleteTopics = Sequence[tuple[str, Sequence[int]]]
"""OffsetDelete's request as the group logic takes it: (topic, partitions) pairs."""
OffsetDeleteRespond = Callable[[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]], None]
"""OffsetDelete's answer: a group-level error (NONE, or it replaces every partition), then per
topic (partition, error) pairs in request order."""


_NONE = ErrorCode.NONE
# Enum members read once: each `GroupState.X` / `ErrorCode.X` lookup costs ~90 ns, on every commit
_DEAD, _EMPTY, _COMPLETING = GroupState.DEAD, GroupState.EMPTY, GroupState.COMPLETING_REBALANCE


class OffsetHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    # -- OffsetCommit -----------------------------------------------------------------------------
    def commit(self, request: CommitRequest, respond: CommitRespond) -> Write | None:
        """Answered at once with an error (None returned), or the write whose durability answers it."""
        error, created = self._validate_commit(request)
        if error is not None:
            respond(error, {})
            return None
        now = self.rt.now_ms()
        group_id, max_metadata = request.group_id, self.rt.config.offset_metadata_max_bytes
        expire = -1 if request.retention_ms == -1 else now + request.retention_ms
        records, errors = [], {}
        for name, parts in request.topics:
            for partition, offset, leader_epoch, metadata, commit_ts in parts:
                # Java's length is at most twice Python's: short metadata needs no count
                if 2 * len(metadata) > max_metadata and _java_length(metadata) > max_metadata:
                    errors[name, partition] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                records.append(
                    OffsetCommitRecord(
                        group_id, name, partition, offset, leader_epoch, metadata,
                        now if commit_ts == -1 else commit_ts, expire,
                    )
                )  # fmt: skip
        if not records:  # nothing to write: the simple group stays, as in Kafka's runtime
            respond(_NONE, errors)
            return None

        def done(exc: BaseException | None) -> None:
            # Every append failure is a storage fault: NOT_COORDINATOR, as Kafka (errors.py).
            respond(_NONE if exc is None else APPEND_FAILED, errors)

        return Write(records, done, undo=created, commits_of=group_id)

    def _validate_commit(self, request: CommitRequest) -> tuple[ErrorCode | None, tuple[Undo, ...]]:
        """Kafka's validateOffsetCommit; creates a simple (offset-only) group for generation < 0
        (with how to forget it again if the commit is not written)."""
        error = self.rt.phase_error(request.group_id)
        if error is not None:
            return error, ()
        # "" is a group id like any other here: Kafka accepts it for backwards compatibility
        # (GroupCoordinatorService.commitOffsets refuses only a null one, which the schema forbids).
        group = self.rt.groups.get(request.group_id)
        created: tuple[Undo, ...] = ()
        if group is None:
            consumer_group = self.rt.consumer_groups.get(request.group_id)  # off the classic path
            if consumer_group is not None:
                return _validate_consumer_commit(consumer_group, request), ()
            if request.group_id in self.rt.share_groups:  # ShareGroup.validateOffsetCommit refuses
                return ErrorCode.GROUP_ID_NOT_FOUND, ()
            if request.generation_id >= 0:
                return request.unknown_group_error, ()
            group = self.rt.get_or_create_group(request.group_id)
            created = (self.rt.forget_if_bare(group),)
        elif (
            request.generation_id < 0
            and group.protocol_type is None
            and not group.members
            and not self.rt.offsets.by_group.get(request.group_id)
        ):
            created = (self.rt.forget_if_bare(group),)  # made by a commit still in flight
        return self._validate_against(group, request), created

    def _validate_against(self, group: Group, request: CommitRequest) -> ErrorCode | None:
        generation, state = request.generation_id, group.state
        if state is _DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and state is _EMPTY:
            return None  # admin tools, assign()-mode consumers
        member_id, iid = request.member_id, request.group_instance_id
        if generation < 0 and not member_id and iid is None:
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members may commit to a non-empty group
        error = group.validate_member(member_id, iid)
        if error is None and generation != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is None and group.state is _COMPLETING:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is None:
            # A commit counts as liveness in Stable and PreparingRebalance.
            self.rb.schedule_session(group, member_id, group.members[member_id].session_timeout_ms)
        return error

    # -- OffsetFetch ------------------------------------------------------------------------------
    def fetch(
        self,
        groups: Sequence[FetchGroup],
        require_stable: bool,
        respond: FetchRespond,
        members: Sequence[tuple[str | None, int]] | None = None,
    ) -> None:
        """Typed at the door (broker/apis/offset_fetch.py, which shapes the version's response):
        one result per group, in request order. `members` (v9+): the member id and epoch each
        group's fetch comes with, checked for consumer-protocol groups."""
        if members is not None:
            checked = list(zip(groups, members, strict=True))

            def answer_checked() -> None:
                respond([self._fetch_group(g, topics, m, require_stable) for (g, topics), m in checked])

            if require_stable:
                self.rt.offsets.when_settled([g for g, _ in groups], answer_checked)
            else:
                answer_checked()
            return
        if require_stable:
            # Java's GroupCoordinatorService.fetchOffsets runs a require_stable fetch as a write
            # operation: it is answered once every write before it is durable, so it never returns
            # an offset that a commit, OffsetDelete, DeleteGroups or expiry in flight is about to
            # change; here it waits for those of its groups (compat.md). (Scala answered
            # UNSTABLE_OFFSET_COMMIT even without transactions.) Then a partition with a pending
            # transactional offset answers UNSTABLE_OFFSET_COMMIT (OffsetMetadataManager.fetchOffsets).
            self.rt.offsets.when_settled(
                [group_id for group_id, _ in groups],
                lambda: respond([self._fetch_group(g, topics, None, True) for g, topics in groups]),
            )
            return
        respond([self._fetch_group(*g) for g in groups])

    def _fetch_group(
        self,
        group_id: str,
        topics: FetchTopics | None,
        member: tuple[str | None, int] | None = None,
        require_stable: bool = False,
    ) -> FetchResult:
        """One group's offsets; `topics` None = all (the committed ones: a partition with only a
        pending transactional offset is not listed, as fetchAllOffsets). Pending transactional
        offsets are never returned; with `require_stable` their partitions answer
        UNSTABLE_OFFSET_COMMIT (fetchOffsets / fetchAllOffsets)."""
        # "" is accepted, as Kafka does (GroupCoordinatorService.fetchOffsets: only null is invalid).
        error = self.rt.phase_error(group_id)
        if error is not None:
            return group_id, error, [(name, [(i, None) for i in parts]) for name, parts in topics or ()]
        consumer_group = self.rt.consumer_groups.get(group_id)
        if consumer_group is not None and member is not None:
            error = _validate_consumer_fetch(consumer_group, *member)
            if error is not None:
                return group_id, error, []
        committed = self.rt.offsets.of_group(group_id)
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for t, p in committed:
                by_topic.setdefault(t, []).append(p)
            topics = [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]
        if require_stable and self.rt.offsets.txn.has_open(group_id):
            pending = self.rt.offsets.txn.has_pending
            unstable = ErrorCode.UNSTABLE_OFFSET_COMMIT

            def stable(name: str, i: int) -> FetchedOffset:
                return unstable if pending(group_id, name, i) else committed.get((name, i))

            return group_id, _NONE, [(name, [(i, stable(name, i)) for i in parts]) for name, parts in topics]
        return (
            group_id,
            _NONE,
            [(name, [(i, committed.get((name, i))) for i in parts]) for name, parts in topics],
        )

    # -- OffsetDelete -----------------------------------------------------------------------------
    def delete(self, group_id: str, topics: OffsetDeleteTopics, respond: OffsetDeleteRespond) -> Write | None:
        """OffsetDelete of partitions the server knows (unknown ones never get here): a group error
        and no topics, or per partition NONE / GROUP_SUBSCRIBED_TO_TOPIC, once the tombstones are
        durable (OffsetMetadataManager.deleteOffsets)."""
        group = self.rt.group(group_id)
        error = self._delete_error(group_id, group)
        if error is not None or group is None:
            respond(error or ErrorCode.GROUP_ID_NOT_FOUND, [])
            return None
        subscribed = {
            name for name, _ in topics if group.state is not GroupState.EMPTY and group.is_subscribed_to(name)
        }
        is_known = self.rt.offsets.is_known  # in flight too
        tombstones = self.rt.offsets.with_pending(
            OffsetTombstone(group_id, name, partition)
            for name, partitions in topics
            if name not in subscribed
            for partition in partitions
            if is_known(group_id, name, partition)
        )
        results = [
            (
                name,
                [
                    (p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if name in subscribed else ErrorCode.NONE)
                    for p in ps
                ],
            )
            for name, ps in topics
        ]
        if not tombstones:
            respond(ErrorCode.NONE, results)
            return None

        def done(exc: BaseException | None) -> None:
            if exc is None:
                respond(ErrorCode.NONE, results)
            else:
                respond(APPEND_FAILED, [])

        return Write(tombstones, done)

    def _delete_error(self, group_id: str, group: Group | None) -> ErrorCode | None:
        """OffsetDelete group checks: missing -> GROUP_ID_NOT_FOUND; a non-empty group may only
        delete offsets if it is a consumer group (per topic, below) -> else NON_EMPTY_GROUP."""
        # GroupCoordinatorService.deleteOffsets refuses "" before its runtime's loading check.
        error = self.rt.service_error(group_id) or self.rt.phase_error(group_id)
        if error is not None:
            return error
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP
        return None


def _java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, what Kafka compares with offset.metadata.max.bytes
    (OffsetMetadataManager.isMetadataInvalid). Characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _validate_consumer_commit(group: ConsumerGroup, request: CommitRequest) -> ErrorCode | None:
    """Kafka's ConsumerGroup.validateOffsetCommit: epoch -1 commits only to an empty group; a
    consumer-protocol member must use v9+ (UNSUPPORTED_VERSION) and its current member epoch
    (STALE_MEMBER_EPOCH); a commit is no heartbeat here."""
    if request.generation_id < 0 and not group.members:
        return None
    member = group.members.get(request.member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    classic = member.classic is not None  # a classic member (online migration) commits as before
    if request.api_version < 9 and not classic:
        return ErrorCode.UNSUPPORTED_VERSION
    if request.generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
    return None


def _validate_consumer_fetch(
    group: ConsumerGroup, member_id: str | None, member_epoch: int
) -> ErrorCode | None:
    """Kafka's ConsumerGroup.validateOffsetFetch: no member id and epoch -1 (admin tools) may fetch;
    otherwise the member must exist with that epoch."""
    if member_id is None and member_epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
    return None
