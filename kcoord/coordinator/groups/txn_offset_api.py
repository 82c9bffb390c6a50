"""TxnOffsetCommit (28) v0-5 and the group coordinator's half of a transaction marker (Kafka's
GroupCoordinatorService.commitTransactionalOffsets / completeTransaction, OffsetMetadataManager.
commitTransactionalOffset and replayEndTransactionMarker; txn_offsets.py holds the pending offsets).

A TxnOffsetCommit is answered once its pending offsets are durable; they stay invisible to
OffsetFetch (a require_stable fetch answers UNSTABLE_OFFSET_COMMIT for their partitions) until the
producer's COMMIT marker applies them, or its ABORT marker drops them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kcoord.coordinator.groups.consumer.model import ConsumerGroup
from kcoord.coordinator.groups.errors import APPEND_FAILED, ErrorCode
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.offset_api import _java_length
from kcoord.coordinator.groups.records import LogRecord, TxnOffsetCommitRecord
from kcoord.coordinator.groups.runtime import Runtime, Undo, Write
from kcoord.coordinator.groups.state import GroupState
from kcoord.coordinator.runtime import OnDone

__all__ = [
    "MarkerRejected",
    "TxnCommitRequest",
    "TxnCommitRespond",
    "TxnOffsetHandler",
    "TxnPartition",
]

log = logging.getLogger("coordinator.groups")


class TxnPartition(NamedTuple):
    """One partition of a TxnOffsetCommit: `leader_epoch` -1 = none (before v2), `metadata` None = ""."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True, slots=True)
class TxnCommitRequest:
    """A TxnOffsetCommit typed at the door, which answers unknown topics and partitions itself
    (KafkaApis.handleTxnOffsetCommitRequest) and maps COORDINATOR_LOAD_IN_PROGRESS to
    COORDINATOR_NOT_AVAILABLE for v0-1. `generation_id` -1, `member_id` "" and
    `group_instance_id` None are what v0-2 (no KIP-447 group metadata) carry."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    partitions: Sequence[TxnPartition]


TxnCommitRespond = Callable[[list[tuple[str, int, ErrorCode]]], None]
"""TxnOffsetCommit's answer: (topic, partition, error) for every requested partition, in order."""


class MarkerRejected(Exception):
    """`complete_transaction` could not apply the marker; the writer retries (Kafka's marker
    writes are retried until they succeed). `error` is Kafka's error for it."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


class TxnOffsetHandler:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    # -- TxnOffsetCommit --------------------------------------------------------------------------
    def commit(self, request: TxnCommitRequest, respond: TxnCommitRespond) -> None:
        error, created = self._validate(request)
        if error is not None:
            respond([(p.topic, p.partition, error) for p in request.partitions])
            return
        records, errors = self._records(request)
        if not records:
            respond([(p.topic, p.partition, errors.get((p.topic, p.partition), ErrorCode.NONE))
                     for p in request.partitions])  # fmt: skip
            return
        self._write(request, records, errors, created, respond)

    def _records(
        self, request: TxnCommitRequest
    ) -> tuple[list[TxnOffsetCommitRecord], dict[tuple[str, int], ErrorCode]]:
        now, max_metadata = self.rt.now_ms(), self.rt.config.offset_metadata_max_bytes
        records, errors = [], {}
        for p in request.partitions:
            metadata = p.metadata or ""  # OffsetAndMetadata.fromRequest: null -> ""
            if _java_length(metadata) > max_metadata:
                errors[p.topic, p.partition] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            records.append(
                TxnOffsetCommitRecord(request.producer_id, request.producer_epoch, request.group_id,
                                      p.topic, p.partition, p.offset, p.leader_epoch, metadata, now)
            )  # fmt: skip
        return records, errors

    def _write(
        self,
        request: TxnCommitRequest,
        records: list[TxnOffsetCommitRecord],
        errors: dict[tuple[str, int], ErrorCode],
        created: tuple[Undo, ...],
        respond: TxnCommitRespond,
    ) -> None:
        """Write the pending offsets; their partitions count as pending while in flight (a
        DeleteGroups or OffsetDelete behind them tombstones them too) and require_stable fetches
        wait for the write, as Kafka's timeline makes a write visible to the operations after it."""
        group_id, offsets = request.group_id, self.rt.offsets
        partitions = [(r.topic, r.partition) for r in records]
        offsets.txn.begin(group_id, request.producer_id, partitions)
        write_id = offsets.begin_write([group_id])
        ended = False

        def end_in_flight() -> None:  # before the undo, which asks whether a simple group is bare
            nonlocal ended
            if not ended:
                ended = True
                offsets.txn.end(group_id, request.producer_id, partitions)

        def done(exc: BaseException | None) -> None:
            end_in_flight()
            outcome = ErrorCode.NONE if exc is None else APPEND_FAILED
            respond([(p.topic, p.partition, errors.get((p.topic, p.partition), outcome))
                     for p in request.partitions])  # fmt: skip
            offsets.end_write(write_id, [group_id])

        self.rt.run(Write(records, done, undo=(*created, end_in_flight)))

    def _validate(self, request: TxnCommitRequest) -> tuple[ErrorCode | None, tuple[Undo, ...]]:
        """GroupCoordinatorService.commitTransactionalOffsets (inactive, "" group id), the runtime's
        loading check, OffsetMetadataManager.validateTransactionalOffsetCommit, then the producer
        epoch the partition's producer state holds (ProducerAppendInfo.checkProducerEpoch)."""
        error = self.rt.service_error(request.group_id) or self.rt.phase_error(request.group_id)
        if error is not None:
            return error, ()
        created: tuple[Undo, ...] = ()
        consumer_group = self.rt.consumer_groups.get(request.group_id)
        group = self.rt.groups.get(request.group_id)
        if consumer_group is not None:
            error = _validate_consumer(consumer_group, request)
        elif request.group_id in self.rt.share_groups:
            # ShareGroup.validateOffsetCommit throws GroupIdNotFoundException (probed on the 4.3.1 jar;
            # OffsetCommit's answer checked on the oracle), never a simple group in its place
            error = ErrorCode.GROUP_ID_NOT_FOUND
        elif group is None and request.generation_id >= 0:
            error = ErrorCode.ILLEGAL_GENERATION  # no GROUP_ID_NOT_FOUND here, whatever the version
        else:
            if group is None:  # a simple group, as for OffsetCommit with generation -1
                group = self.rt.get_or_create_group(request.group_id)
            if self.rt.is_bare(group):
                created = (self.rt.forget_if_bare(group),)
            error = _validate_classic(group, request)
        if error is None:
            error = self._epoch_error(request)
        if error is not None:
            for undo in created:  # nothing is written: no simple group either
                undo()
            return error, ()
        return None, created

    def _epoch_error(self, request: TxnCommitRequest) -> ErrorCode | None:
        known = self.rt.offsets.txn.producer_epoch(request.producer_id)
        if known is not None and request.producer_epoch < known:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return None

    # -- the marker -------------------------------------------------------------------------------
    def complete(self, producer_id: int, producer_epoch: int, commit: bool, done: OnDone) -> None:
        """Apply (COMMIT) or drop (ABORT) the producer's pending offsets in every group, durably.

        Waits first for the writes of those groups' offsets in flight: the marker's batch is built
        from the durable state and appended at once, which puts the marker after them in the log,
        as if it had arrived a moment later (Kafka appends it behind the writes already queued)."""
        # The node's phase: a marker names a producer, whose pending offsets may sit in any group here.
        error = self.rt.phases.node_error
        if error is not None:
            done(MarkerRejected(error, f"the group coordinator is {self.rt.phase.value}"))
            return
        groups = sorted(self.rt.offsets.txn.groups_of(producer_id))
        if not groups:  # no pending offsets: nothing to apply (replayEndTransactionMarker ignores it)
            done(None)
            return

        def attempt() -> None:
            offsets = self.rt.offsets
            if any(offsets.has_write_in_flight(g) for g in groups):
                offsets.when_settled(groups, attempt)
                return
            self._write_marker(producer_id, producer_epoch, commit, done)

        attempt()

    def _write_marker(self, producer_id: int, producer_epoch: int, commit: bool, done: OnDone) -> None:
        offsets = self.rt.offsets
        known = offsets.txn.producer_epoch(producer_id)
        if known is not None and producer_epoch < known:  # ProducerAppendInfo.appendEndTxnMarker
            done(MarkerRejected(ErrorCode.INVALID_PRODUCER_EPOCH, f"marker epoch {producer_epoch} < {known}"))
            return
        groups = sorted(offsets.txn.groups_of(producer_id))
        if not groups:  # a marker before this one completed it
            done(None)
            return
        records: list[LogRecord] = offsets.txn.marker_records(producer_id, commit, offsets.get)
        write_id = offsets.begin_write(groups)
        log.info(
            "transaction marker: producer_id=%d producer_epoch=%d result=%s groups=%s records=%d",
            producer_id, producer_epoch, "COMMIT" if commit else "ABORT", groups, len(records),
        )  # fmt: skip

        def written(exc: BaseException | None) -> None:
            done(exc)
            offsets.end_write(write_id, groups)

        self.rt.run(Write(records, written))


def _validate_classic(group: Group, request: TxnCommitRequest) -> ErrorCode | None:
    """ClassicGroup.validateOffsetCommit with isTransactional: no member information (v0-2, or a
    producer outside the group) is accepted in any state; no REBALANCE_IN_PROGRESS; a commit is no
    heartbeat (commitTransactionalOffset reschedules no session)."""
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    generation = request.generation_id
    if generation < 0 and group.state is GroupState.EMPTY:
        return None
    if generation >= 0 or request.member_id or request.group_instance_id is not None:
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error is None and generation != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        return error
    return None


def _validate_consumer(group: ConsumerGroup, request: TxnCommitRequest) -> ErrorCode | None:
    """ConsumerGroup.validateOffsetCommit with isTransactional (any version; epoch -1 only to an
    empty group, so an old client without member information gets UNKNOWN_MEMBER_ID from a group
    with members); OffsetMetadataManager.validateTransactionalOffsetCommit answers a stale member
    epoch with ILLEGAL_GENERATION."""
    if request.generation_id < 0 and not group.members:
        return None
    member = group.members.get(request.member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if request.generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION  # STALE_MEMBER_EPOCH for a consumer-protocol member
    return None
