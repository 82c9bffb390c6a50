"""What acknowledgements, a member leaving and lock expiry do to the window, and the state batches each
writes (SharePartition.acknowledge, releaseAcquiredRecords, releaseAcquisitionLockOnTimeout).

Acknowledge and release start transitions that the write settles (`complete`); lock expiry changes the
state at once and writes it, as Kafka does (its write failing changes nothing then).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kcoord.coordinator.share_partitions.model import AcknowledgeType, RecordState, StateBatch
from kcoord.coordinator.share_partitions.window import (
    DeliveryCountOps,
    InFlightBatch,
    InFlightState,
    ShareWindow,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["AckBatch", "Transition", "acknowledge", "complete", "expire_locks", "release_member"]

AckBatch = tuple[int, int, Sequence[int]]
"""(first offset, last offset, acknowledge types): one type for the batch or one per offset."""

ACK_TYPE_TO_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}
_ACQUIRED = RecordState.ACQUIRED
_INVALID_STATE = ErrorCode.INVALID_RECORD_STATE


@dataclass(frozen=True, slots=True)
class Transition:
    """A state changed by a write and the state batch the write carries for it (Kafka's PersisterBatch)."""

    state: InFlightState
    batch: StateBatch


def _record(state: InFlightState, first: int, last: int, out: list[Transition]) -> None:
    out.append(Transition(state, StateBatch(first, last, state.state, state.delivery_count)))


def complete(transitions: Sequence[Transition], commit: bool, now_ms: int) -> bool:
    """Settle the transitions of one write (rollbackOrProcessStateUpdates); True when a record became
    AVAILABLE (the next fetch offset must be looked for again)."""
    available = False
    for t in transitions:
        t.state.complete_transition(commit, now_ms)
        available = available or t.state.state is RecordState.AVAILABLE
    return available


def _valid_types(first: int, last: int, types: Sequence[int]) -> bool:
    """One type for the batch or one per offset, each a known AcknowledgeType (fetchAckTypeMapForBatch;
    the per-offset count is KafkaApis' check)."""
    if last < first or not types or (len(types) > 1 and len(types) != last - first + 1):
        return False
    return all(t in AcknowledgeType._value2member_map_ for t in types)


def acknowledge(
    window: ShareWindow,
    member_id: str,
    batches: Sequence[AckBatch],
    max_delivery: int,
    renew_deadline_ms: int,
) -> tuple[ErrorCode | None, list[Transition]]:
    """SharePartition.acknowledge: every batch's records move on, or none do (the first error rolls back
    what the earlier batches started). RENEW restarts the acquisition lock and writes nothing."""
    out: list[Transition] = []
    for first, last, types in batches:
        if not _valid_types(first, last, types):
            error: ErrorCode | None = ErrorCode.INVALID_REQUEST
        elif last < window.start_offset:
            continue  # already archived
        else:
            error = _acknowledge_batch(
                window, member_id, (first, last, types), max_delivery, renew_deadline_ms, out
            )
        if error is not None:
            complete(out, commit=False, now_ms=0)
            return error, []
    return None, out


def _overlapping(window: ShareWindow, first: int, last: int) -> list[InFlightBatch] | ErrorCode:
    """fetchSubMapForAcknowledgementBatch: the window's batches under first..last, which must end inside
    what was fetched."""
    low = first
    floor = window.floor(first)
    if floor is None:
        if not first < window.start_offset <= last:
            return _INVALID_STATE
        low = window.start_offset
    batches = [
        b for b in window.between(low if floor is None else floor.first_offset, last) if b.last_offset >= low
    ]
    if not batches or last > batches[-1].last_offset:
        return ErrorCode.INVALID_REQUEST
    return batches


def _acknowledge_batch(
    window: ShareWindow,
    member_id: str,
    ack: AckBatch,
    max_delivery: int,
    renew_ms: int,
    out: list[Transition],
) -> ErrorCode | None:
    first, last, types = ack
    found = _overlapping(window, first, last)
    if isinstance(found, ErrorCode):
        return found
    for batch in found:
        if batch.last_offset < window.start_offset:
            continue
        whole = batch.batch
        if whole is not None and (whole.member_id != member_id or whole.rollback is not None):
            return _INVALID_STATE  # not acquired, acquired by another member, or being written
        full = batch.first_offset >= first and batch.last_offset <= last
        straddles = batch.first_offset < window.start_offset <= batch.last_offset
        if whole is not None and full and len(types) == 1 and not straddles:
            error = _ack_state(
                whole, batch.first_offset, batch.last_offset, types[0], max_delivery, renew_ms, out
            )
        else:
            if whole is not None and whole.state is not _ACQUIRED:
                return _INVALID_STATE
            error = _ack_offsets(window, batch, member_id, ack, max_delivery, renew_ms, out)
        if error is not None:
            return error
    return None


def _ack_offsets(
    window: ShareWindow,
    batch: InFlightBatch,
    member_id: str,
    ack: AckBatch,
    max_delivery: int,
    renew_ms: int,
    out: list[Transition],
) -> ErrorCode | None:
    """acknowledgePerOffsetBatchRecords."""
    first, last, types = ack
    for offset, state in batch.split().items():
        if offset < first or offset < window.start_offset:
            continue
        if offset > last:
            break
        if state.rollback is not None or state.member_id != member_id:
            return _INVALID_STATE
        ack_type = types[offset - first] if len(types) > 1 else types[0]
        error = _ack_state(state, offset, offset, ack_type, max_delivery, renew_ms, out)
        if error is not None:
            return error
    return None


def _ack_state(
    state: InFlightState,
    first: int,
    last: int,
    ack_type: int,
    max_delivery: int,
    renew_ms: int,
    out: list[Transition],
) -> ErrorCode | None:
    """acknowledgeCompleteBatch / one offset of acknowledgePerOffsetBatchRecords."""
    if state.state is not _ACQUIRED:
        return _INVALID_STATE
    if ack_type == AcknowledgeType.RENEW:
        state.lock_deadline_ms = renew_ms
        return None
    target = ACK_TYPE_TO_STATE[AcknowledgeType(ack_type)]
    if not state.start_transition(target, DeliveryCountOps.NO_OP, max_delivery, None):
        return _INVALID_STATE
    _record(state, first, last, out)
    return None


def release_member(window: ShareWindow, member_id: str, max_delivery: int) -> list[Transition]:
    """SharePartition.releaseAcquiredRecords: the member's ACQUIRED records become AVAILABLE again with
    their delivery count kept (ARCHIVED at the delivery count limit), or ARCHIVED below the start offset.
    Kafka 4.3.1 keeps the count (`releaseAcquiredRecordsForCompleteBatch` / `ForPerOffsetBatch`:
    DeliveryCountOps.NO_OP): a killed Java member's records come back to the next member with count 2
    (tests/share, run against Kafka 4.3.1 itself); trunk's DECREASE is for records fetched but never sent."""
    out: list[Transition] = []
    start = window.start_offset
    for key in list(window.keys):
        batch = window.batches[key]
        whole = batch.batch
        if (
            whole is not None
            and whole.member_id == member_id
            and batch.first_offset < start <= batch.last_offset
        ):
            batch.split()
        for first, last, state in list(batch.states()):
            if state.state is not _ACQUIRED or state.member_id != member_id:
                continue
            target = RecordState.ARCHIVED if last < start else RecordState.AVAILABLE
            if state.start_transition(target, DeliveryCountOps.NO_OP, max_delivery, None):
                _record(state, first, last, out)
    return out


def expire_locks(window: ShareWindow, now_ms: int | None, max_delivery: int) -> list[StateBatch]:
    """releaseAcquisitionLockOnTimeout for every lock due by `now_ms` (None: every lock): ACQUIRED ->
    AVAILABLE, or ARCHIVED at the delivery count limit or below the start offset. Changed at once."""
    out: list[StateBatch] = []
    start = window.start_offset
    for key in list(window.keys):
        batch = window.batches[key]
        whole = batch.batch
        if whole is not None and _due(whole, now_ms) and batch.first_offset < start <= batch.last_offset:
            batch.split()
        for first, last, state in list(batch.states()):
            if not _due(state, now_ms):
                continue
            target = RecordState.ARCHIVED if last < start else RecordState.AVAILABLE
            if not state.try_update(target, DeliveryCountOps.NO_OP, max_delivery, None):
                continue
            state.lock_deadline_ms = None
            out.append(StateBatch(first, last, state.state, state.delivery_count))
            if state.state is RecordState.AVAILABLE:
                window.find_next_fetch_offset = True
    return out


def _due(state: InFlightState, now_ms: int | None) -> bool:
    if state.state is not _ACQUIRED or state.rollback is not None or state.lock_deadline_ms is None:
        return False
    return now_ms is None or state.lock_deadline_ms <= now_ms


def next_lock_deadline(window: ShareWindow) -> int | None:
    """The earliest acquisition lock deadline in the window, for the share partition's one timer."""
    deadlines = [
        state.lock_deadline_ms
        for batch in window.batches.values()
        for _, _, state in batch.states()
        if state.state is _ACQUIRED and state.lock_deadline_ms is not None
    ]
    return min(deadlines, default=None)
