"""The in-flight window of one share partition (SharePartition's cachedState, InFlightBatch, InFlightState).

Records fetched into the window are tracked per batch until something touches part of a batch (a
per-offset acknowledgement, a partial acquisition, the start offset moving into it); then that batch
keeps one state per offset (InFlightBatch.maybeInitializeOffsetStateUpdate). A state in transition
(written, not yet durable) keeps what it was in `rollback`: it is neither acquired nor acknowledged
again, nor does the start offset move past it, until the write settles (InFlightState.rollbackState).
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from kcoord.coordinator.share_partitions.model import RecordState

__all__ = ["DeliveryCountOps", "InFlightBatch", "InFlightState", "ShareWindow", "is_terminal"]

TERMINAL = frozenset((RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))


def is_terminal(state: RecordState) -> bool:
    return state in TERMINAL


class DeliveryCountOps(enum.Enum):
    INCREASE = 1
    DECREASE = -1
    NO_OP = 0


@dataclass(frozen=True, slots=True)
class Previous:
    """What a state was before its transition started, and the delivery limit then."""

    state: RecordState
    delivery_count: int
    member_id: str | None
    max_delivery_count: int


@dataclass(slots=True)
class InFlightState:
    """One record's (or a whole batch's) delivery state (Kafka's InFlightState)."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int | None = None
    """When the acquisition lock expires (ACQUIRED only; the tenant's one timer per share partition)."""
    rollback: Previous | None = None
    terminal: bool = False
    """Archived outside a transition (InFlightState.archive): a failed write does not bring it back."""

    def try_update(
        self, new: RecordState, ops: DeliveryCountOps, max_delivery: int, member: str | None
    ) -> bool:
        """InFlightState.tryUpdateState: AVAILABLE at the delivery count limit becomes ARCHIVED (unless
        the count goes down); only AVAILABLE -> ACQUIRED and ACQUIRED -> anything else are legal."""
        if self.rollback is not None:
            return False
        if (
            new is RecordState.AVAILABLE
            and ops is not DeliveryCountOps.DECREASE
            and self.delivery_count >= max_delivery
        ):
            new = RecordState.ARCHIVED
        if not _legal(self.state, new):
            return False
        self.state = new
        if new is not RecordState.ARCHIVED:
            self.delivery_count += ops.value
        self.member_id = member
        return True

    def start_transition(
        self, new: RecordState, ops: DeliveryCountOps, max_delivery: int, member: str | None
    ) -> bool:
        """InFlightState.startStateTransition: change now, remember how to undo until the write settles."""
        previous = Previous(self.state, self.delivery_count, self.member_id, max_delivery)
        if not self.try_update(new, ops, max_delivery, member):
            return False
        self.rollback = previous
        return True

    def complete_transition(self, commit: bool, now_ms: int) -> None:
        """InFlightState.completeStateTransition: keep the change, or go back, unless the acquisition lock
        expired meanwhile (then AVAILABLE, or ARCHIVED at the delivery count limit)."""
        previous = self.rollback
        self.rollback = None
        if commit or self.terminal or previous is None:
            self.lock_deadline_ms = None
            return
        if self.lock_deadline_ms is not None and self.lock_deadline_ms <= now_ms:
            at_limit = previous.delivery_count >= previous.max_delivery_count
            self.state = RecordState.ARCHIVED if at_limit else RecordState.AVAILABLE
            self.member_id = None
            self.lock_deadline_ms = None
            return
        self.state = previous.state
        self.member_id = previous.member_id

    def archive(self) -> None:
        """InFlightState.archive: ARCHIVED for good (below the log start, an aborted transaction)."""
        self.terminal = True
        self.state = RecordState.ARCHIVED
        self.member_id = None
        self.lock_deadline_ms = None

    def copy(self) -> InFlightState:
        return replace(self)


def _legal(old: RecordState, new: RecordState) -> bool:
    """RecordState.validateTransition."""
    if old is new or is_terminal(old):
        return False
    return old is not RecordState.AVAILABLE or new is RecordState.ACQUIRED


@dataclass(slots=True)
class InFlightBatch:
    """Offsets first..last fetched together: one state for all, or one per offset once split."""

    first_offset: int
    last_offset: int
    batch: InFlightState | None
    offsets: dict[int, InFlightState] | None = None
    gap: bool = False
    """Offsets between the durable state's batches (fetched, never settled): no records are cached there
    yet, so acquisition takes them as new records (Kafka's persister read gap window)."""

    def split(self) -> dict[int, InFlightState]:
        """InFlightBatch.maybeInitializeOffsetStateUpdate: one state per offset from now on."""
        if self.offsets is None:
            assert self.batch is not None
            whole = self.batch
            self.offsets = {o: whole.copy() for o in range(self.first_offset, self.last_offset + 1)}
            self.batch = None
        return self.offsets

    def states(self) -> Iterator[tuple[int, int, InFlightState]]:
        """(first, last, state) of the batch, or of each offset once split."""
        if self.offsets is None:
            assert self.batch is not None
            yield self.first_offset, self.last_offset, self.batch
        else:
            for offset, state in self.offsets.items():
                yield offset, offset, state


@dataclass(slots=True)
class ShareWindow:
    """The window start_offset..end_offset of one share partition (SPSO..SPEO) and its batches."""

    start_offset: int
    end_offset: int
    batches: dict[int, InFlightBatch] = field(default_factory=dict)
    keys: list[int] = field(default_factory=list)
    find_next_fetch_offset: bool = False

    def put(self, batch: InFlightBatch) -> None:
        if batch.first_offset not in self.batches:
            bisect.insort(self.keys, batch.first_offset)
        self.batches[batch.first_offset] = batch

    def floor(self, offset: int) -> InFlightBatch | None:
        i = bisect.bisect_right(self.keys, offset)
        return self.batches[self.keys[i - 1]] if i else None

    def between(self, low: int, high: int) -> list[InFlightBatch]:
        """The batches whose first offset is in low..high (NavigableMap.subMap, both inclusive)."""
        i, j = bisect.bisect_left(self.keys, low), bisect.bisect_right(self.keys, high)
        return [self.batches[k] for k in self.keys[i:j]]

    def last(self) -> InFlightBatch | None:
        return self.batches[self.keys[-1]] if self.keys else None

    def clear(self) -> None:
        self.batches.clear()
        self.keys.clear()

    def drop_through(self, key: int) -> None:
        """Remove every batch whose first offset is <= key."""
        j = bisect.bisect_right(self.keys, key)
        for k in self.keys[:j]:
            del self.batches[k]
        del self.keys[:j]

    def is_stale(self) -> bool:
        """Empty, or the start offset moved past every batch (then start == end is the next fetch)."""
        last = self.last()
        return last is None or self.start_offset > last.last_offset

    def in_flight_count(self) -> int:
        """SharePartition.numInFlightRecords."""
        return 0 if not self.keys else self.end_offset - self.start_offset + 1

    def next_fetch_offset(self) -> int:
        """SharePartition.nextFetchOffset: the first AVAILABLE offset not in transition when one may
        exist, else past the window."""
        if self.is_stale():
            self.find_next_fetch_offset = False
            return self.end_offset
        if self.find_next_fetch_offset:
            for batch in (
                self.batches.values() if len(self.keys) < 2 else (self.batches[k] for k in self.keys)
            ):
                for first, _, state in batch.states():
                    if state.state is RecordState.AVAILABLE and state.rollback is None:
                        return max(first, self.start_offset)
            self.find_next_fetch_offset = False
        return self.end_offset + 1

    def can_acquire(self, max_record_locks: int) -> bool:
        """SharePartition.canAcquireRecords: records released inside the window, or room past it."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_count() < max_record_locks

    def advance_start(self) -> bool:
        """SharePartition.maybeUpdateCachedStateAndOffsets: move the start offset past the leading
        ACKNOWLEDGED/ARCHIVED records and drop the batches wholly behind it. True when it moved."""
        last_terminal = self._last_terminal_offset()
        if last_terminal is None:
            return False
        last = self.last()
        assert last is not None
        if last_terminal == last.last_offset:
            self.start_offset = self.end_offset = last_terminal + 1
            self.clear()
            return True
        holder = self.floor(last_terminal)
        assert holder is not None
        if last_terminal == holder.last_offset:
            # the next batch's first offset: past a compacted-away gap too (cachedState.higherKey)
            following = self.keys[bisect.bisect_right(self.keys, last_terminal)]
            self.start_offset = max(self.start_offset, following)
            self.drop_through(holder.first_offset)
        else:
            self.start_offset = max(self.start_offset, last_terminal + 1)
            self.drop_through(holder.first_offset - 1)
        return True

    def _last_terminal_offset(self) -> int | None:
        """The last offset of the leading run of settled terminal records from the start offset
        (canMoveStartOffset + findLastOffsetAcknowledgedAndMetadata); None when the start cannot move."""
        found: int | None = None
        for key in self.keys:
            for _, last, state in self.batches[key].states():
                if last < self.start_offset:
                    continue
                if state.rollback is not None or not is_terminal(state.state):
                    return found
                found = last
        return found

    def states_from(self, low: int, high: int) -> Iterator[tuple[InFlightBatch, int, int, InFlightState]]:
        """Every (batch, first, last, state) overlapping low..high, in offset order."""
        floor = self.floor(low)
        start = floor.first_offset if floor is not None and floor.last_offset >= low else low
        for batch in self.between(start, high):
            for first, last, state in batch.states():
                if last >= low and first <= high:
                    yield batch, first, last, state
