"""The durable state of share partitions: what replay of ShareSnapshot / ShareUpdate records builds, and
which record a write makes (share-coordinator's ShareCoordinatorShard and PersisterStateBatchCombiner).

`advance(state, record)` is the one replay step, used by recovery and by every live write once durable
(`SharePartitions.apply`), and by the writer to keep the state as of the records it issued, so that the
next record it builds lays over writes still in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kcoord.coordinator.share_partitions.model import ShareKey, StateBatch
from kcoord.coordinator.share_partitions.records import (
    ShareRecord,
    ShareSnapshot,
    ShareTombstone,
    ShareUpdate,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["DurableState", "NotHosted", "advance", "build_record", "combine_batches", "write_error_code"]


class NotHosted(Exception):
    """A write the log refused because the share partition is no longer served here (cluster mode: its
    partition's leader moved or its state epoch was reset, the write fenced): NOT_LEADER_OR_FOLLOWER,
    as SharePartitionManager answers FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH from the persister."""


def write_error_code(error: BaseException | None) -> ErrorCode:
    """A write's answer: done, refused by a fence (cluster mode), or failed."""
    if error is None:
        return ErrorCode.NONE
    if isinstance(error, NotHosted):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(frozen=True, slots=True)
class DurableState:
    """One share partition as its records say (Kafka's ShareGroupOffset), plus what the writer needs:
    the snapshot it lays updates over and how many updates it already laid."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    """The combined state: the snapshot's batches with the updates' laid over them, at or past the start."""
    snapshot_batches: tuple[StateBatch, ...]
    delta: tuple[StateBatch, ...]
    """Every batch changed since the snapshot (what the next cumulative update starts from)."""
    updates_since_snapshot: int
    create_timestamp_ms: int


def _paint(spans: list[StateBatch], batch: StateBatch) -> list[StateBatch]:
    """Lay `batch` over non-overlapping `spans`: the parts of spans it covers give way to it."""
    out: list[StateBatch] = []
    for s in spans:
        if s.last_offset < batch.first_offset or s.first_offset > batch.last_offset:
            out.append(s)
            continue
        if s.first_offset < batch.first_offset:
            out.append(StateBatch(s.first_offset, batch.first_offset - 1, s.delivery_state, s.delivery_count))
        if s.last_offset > batch.last_offset:
            out.append(StateBatch(batch.last_offset + 1, s.last_offset, s.delivery_state, s.delivery_count))
    out.append(batch)
    return out


def combine_batches(
    old: Iterable[StateBatch], new: Sequence[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """PersisterStateBatchCombiner.combineStateBatches: `new` laid over `old` in order (a later batch
    wins where they overlap), everything below `start_offset` dropped, neighbours with the same state
    and delivery count merged."""
    spans = list(old)
    for batch in new:
        spans = _paint(spans, batch)
    spans.sort(key=lambda b: b.first_offset)
    merged: list[StateBatch] = []
    for s in spans:
        if s.last_offset < start_offset:
            continue
        if s.first_offset < start_offset:
            s = StateBatch(start_offset, s.last_offset, s.delivery_state, s.delivery_count)
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and prev.last_offset + 1 == s.first_offset
            and (prev.delivery_state, prev.delivery_count) == (s.delivery_state, s.delivery_count)
        ):
            merged[-1] = StateBatch(prev.first_offset, s.last_offset, s.delivery_state, s.delivery_count)
        else:
            merged.append(s)
    return tuple(merged)


def _from_snapshot(record: ShareSnapshot) -> DurableState:
    batches = combine_batches((), record.state_batches, record.start_offset)
    return DurableState(
        snapshot_epoch=record.snapshot_epoch,
        state_epoch=record.state_epoch,
        leader_epoch=record.leader_epoch,
        start_offset=record.start_offset,
        batches=batches,
        snapshot_batches=batches,
        delta=(),
        updates_since_snapshot=0,
        create_timestamp_ms=record.create_timestamp_ms,
    )


def advance(state: DurableState | None, record: ShareRecord) -> DurableState | None:
    """One record replayed over the state (ShareCoordinatorShard.replay: handleShareSnapshot replaces,
    handleShareUpdate merges; a tombstone deletes). An update of an older snapshot than the state's
    is stale (the log keeps it until compaction) and changes nothing."""
    match record:
        case ShareSnapshot():
            return _from_snapshot(record)
        case ShareTombstone():
            return None
        case ShareUpdate():
            if state is None:  # an update without its snapshot: Kafka starts the state from it
                base = ShareSnapshot(*record.key, record.snapshot_epoch, 0, record.leader_epoch,
                                     record.start_offset, ())  # fmt: skip
                state = _from_snapshot(base)
            if record.snapshot_epoch != state.snapshot_epoch:
                return state
            start = state.start_offset if record.start_offset == -1 else record.start_offset
            return DurableState(
                snapshot_epoch=state.snapshot_epoch,
                state_epoch=state.state_epoch,
                leader_epoch=max(state.leader_epoch, record.leader_epoch),
                start_offset=start,
                batches=combine_batches(state.snapshot_batches, record.state_batches, start),
                snapshot_batches=state.snapshot_batches,
                delta=record.state_batches,
                updates_since_snapshot=state.updates_since_snapshot + 1,
                create_timestamp_ms=state.create_timestamp_ms,
            )
    raise TypeError(f"not a share record: {record!r}")


def build_record(
    issued: DurableState | None,
    key: ShareKey,
    *,
    state_epoch: int,
    start_offset: int,
    new_batches: Sequence[StateBatch],
    now_ms: int,
    snapshot_every: int,
    delivery_complete_count: int = -1,
) -> ShareSnapshot | ShareUpdate:
    """The record of one write (ShareCoordinatorShard.generateShareStateRecord): a snapshot when the share
    partition has none yet, when its state epoch changes (a reset) or after `snapshot_every` updates;
    otherwise an update with every batch changed since the snapshot."""
    group_id, topic_id, partition = key
    if issued is None or issued.state_epoch != state_epoch or issued.updates_since_snapshot >= snapshot_every:
        epoch = 0 if issued is None else issued.snapshot_epoch + 1
        old = () if issued is None or issued.state_epoch != state_epoch else issued.batches
        created = now_ms if issued is None else issued.create_timestamp_ms
        return ShareSnapshot(
            group_id, topic_id, partition, epoch, state_epoch, 0, start_offset,
            combine_batches(old, new_batches, start_offset), created, now_ms, delivery_complete_count,
        )  # fmt: skip
    delta = combine_batches(issued.delta, new_batches, start_offset)
    return ShareUpdate(
        group_id, topic_id, partition, issued.snapshot_epoch, 0, start_offset, delta, delivery_complete_count
    )
