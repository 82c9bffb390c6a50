"""Producers' state per partition: Kafka's `ProducerStateManager`, `ProducerAppendInfo`, `ProducerStateEntry`.

For each producer id: the epoch, the last five batches (first and last sequence, first and last
offset), the coordinator epoch of its last transaction marker, the timestamp of its last write and the
first offset of its open transaction. The checks, in Kafka's order (`UnifiedLog.
analyzeAndValidateProducerState`, `ProducerAppendInfo.appendDataBatch`):

- a batch matching one of the last five of the same epoch is a duplicate (answered with its offset);
- an older epoch is INVALID_PRODUCER_EPOCH;
- a new epoch must start at sequence 0 (unless the producer had no epoch yet), the same epoch must
  continue the last sequence (`checkSequence`); a producer without state takes any sequence (KIP-360:
  its state may have been removed by retention or expiry) -> OUT_OF_ORDER_SEQUENCE_NUMBER;
- a non-transactional batch while the producer has an open transaction is INVALID_TXN_STATE.

A transactional batch opens the producer's transaction at its offset when none is open; a COMMIT or
ABORT marker closes it (`appendEndTxnMarker`: an older producer epoch is INVALID_PRODUCER_EPOCH, a
coordinator epoch lower than the producer's TRANSACTION_COORDINATOR_FENCED). A marker for a producer
with no open transaction (an empty transaction) completes nothing.

Appends not yet durable are *pending*: they count for the checks (a retry racing the first write is a
duplicate) and are dropped if the write fails. Open transactions are tracked on the durable state
only: the first unstable offset is the first offset of the oldest open durable transaction, and a
transaction whose marker is not durable yet is still open there (Kafka's unreplicated transactions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kcoord.partition_log.txn_index import AbortedTxn
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import BatchHeader, EndTransactionMarker, read_end_txn_marker

__all__ = ["CompletedTxn", "ProducerEntry", "ProducerStateRow", "ProducerStates", "replay_batch"]

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
_INT32_MAX = (1 << 31) - 1
Batch = tuple[int, int, int, int]  # first sequence, last sequence, first offset, last offset


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    epoch: int
    batches: tuple[Batch, ...]
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1  # -1: no open transaction

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


_EMPTY = ProducerEntry(NO_PRODUCER_EPOCH, ())  # ProducerStateEntry.empty


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker at `last_offset` (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class ProducerStateRow:
    """One producer as DescribeProducers answers it (`UnifiedLog.activeProducers`)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


def _last_sequence(header: BatchHeader) -> int:
    """Sequences wrap at INT32_MAX (DefaultRecordBatch.incrementSequence)."""
    last = header.base_sequence + header.last_offset_delta
    return last - _INT32_MAX - 1 if last > _INT32_MAX else last


def _in_sequence(last: int, next_first: int) -> bool:
    return next_first == last + 1 or (next_first == 0 and last == _INT32_MAX)


def _sequence_ok(entry: ProducerEntry, epoch: int, first: int) -> bool:
    """ProducerAppendInfo.checkSequence for the first batch of an append."""
    if epoch != entry.epoch:
        return first == 0 or entry.epoch == NO_PRODUCER_EPOCH
    return entry.epoch == NO_PRODUCER_EPOCH or _in_sequence(entry.last_sequence, first)


class ProducerStates:
    def __init__(self) -> None:
        self.durable: dict[int, ProducerEntry] = {}
        self.pending: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # durable open transactions: first offset -> producer id
        self._first_unstable: int | None = None

    def current(self, producer_id: int) -> ProducerEntry | None:
        return self.pending.get(producer_id) or self.durable.get(producer_id)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction in the durable log (None: none open)."""
        return self._first_unstable

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        entry = self.current(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0

    # -- checks ------------------------------------------------------------------------------------------
    def check(self, header: BatchHeader) -> tuple[ErrorCode, int]:
        """(NONE, -1) to append, (NONE, offset) for a duplicate, or (error, -1)."""
        if header.producer_id < 0:
            return ErrorCode.NONE, -1
        entry = self.current(header.producer_id) or _EMPTY
        first, epoch = header.base_sequence, header.producer_epoch
        if epoch == entry.epoch:  # ProducerStateEntry.findDuplicateBatch
            last = _last_sequence(header)
            for batch_first, batch_last, offset, _ in entry.batches:
                if (batch_first, batch_last) == (first, last):
                    return ErrorCode.NONE, offset
        if epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH, -1
        if not _sequence_ok(entry, epoch, first):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        if entry.current_txn_first_offset >= 0 and not header.is_transactional:
            return ErrorCode.INVALID_TXN_STATE, -1
        return ErrorCode.NONE, -1

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> ErrorCode:
        """ProducerAppendInfo.appendEndTxnMarker: checkProducerEpoch, then checkCoordinatorEpoch."""
        entry = self.current(producer_id) or _EMPTY
        if producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if entry.coordinator_epoch > coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    # -- the entry after a batch -------------------------------------------------------------------------
    def updated(self, header: BatchHeader, base_offset: int, max_timestamp: int) -> ProducerEntry | None:
        """The producer's entry once this data batch (now at `base_offset`) is in the log."""
        if header.producer_id < 0:
            return None
        entry = self.current(header.producer_id) or _EMPTY
        batch = (
            header.base_sequence,
            _last_sequence(header),
            base_offset,
            base_offset + header.last_offset_delta,
        )
        batches = (*entry.batches, batch) if entry.epoch == header.producer_epoch else (batch,)
        txn = entry.current_txn_first_offset
        if txn < 0 and header.is_transactional:
            txn = base_offset  # the batch begins a transaction
        return ProducerEntry(
            header.producer_epoch,
            batches[-NUM_BATCHES_TO_RETAIN:],
            entry.coordinator_epoch,
            max_timestamp,
            txn,
        )

    def marker_updated(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        offset: int,
        timestamp: int,
    ) -> tuple[ProducerEntry, CompletedTxn | None]:
        """The producer's entry after a marker at `offset`, and the transaction it completes (none for an
        empty transaction: no index entry, no effect on the last stable offset)."""
        entry = self.current(producer_id) or _EMPTY
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, not commit)
        batches = entry.batches if entry.epoch == producer_epoch else ()  # maybeUpdateProducerEpoch
        return ProducerEntry(producer_epoch, batches, coordinator_epoch, timestamp, -1), completed

    def stage(
        self, header: BatchHeader, marker: EndTransactionMarker | None, base_offset: int, max_timestamp: int
    ) -> tuple[ProducerEntry | None, CompletedTxn | None]:
        """A batch (data, or the `marker`'s control batch) now placed at `base_offset`: its producer's
        entry after it, recorded as pending, and the transaction it completes (`ProducerAppendInfo`
        as `UnifiedLog.append` drives it). (None, None) for a batch without a producer id."""
        completed: CompletedTxn | None = None
        entry: ProducerEntry | None
        if marker is not None:
            entry, completed = self.marker_updated(
                header.producer_id, header.producer_epoch, marker.commit, marker.coordinator_epoch,
                base_offset, max_timestamp,
            )  # fmt: skip
        else:
            entry = self.updated(header, base_offset, max_timestamp)
        if entry is not None:
            self.pending[header.producer_id] = entry
        return entry, completed

    def last_stable_at_append(self, completed: CompletedTxn) -> int:
        """ProducerStateManager.lastStableOffset(completedTxn) when the marker is appended: the first
        offset of another producer's transaction still open (durable or pending), else the marker's
        offset + 1."""
        current = {**self.durable, **self.pending}
        others = [
            e.current_txn_first_offset
            for pid, e in current.items()
            if pid != completed.producer_id and e.current_txn_first_offset >= 0
        ]
        return min(others) if others else completed.last_offset + 1

    # -- durability ------------------------------------------------------------------------------------------
    def make_durable(self, producer_id: int, entry: ProducerEntry, completed: CompletedTxn | None) -> int:
        """The batch that produced `entry` is durable. Returns the last stable offset Kafka records with
        an aborted transaction (`ProducerStateManager.lastStableOffset`: the first offset of the next
        open transaction of another producer, else the marker's offset + 1), -1 without one."""
        old = self.durable.get(producer_id)
        self.durable[producer_id] = entry
        if self.pending.get(producer_id) is entry:
            del self.pending[producer_id]
        began = entry.current_txn_first_offset
        if began >= 0 and (old is None or old.current_txn_first_offset != began):
            self.ongoing[began] = producer_id
            if self._first_unstable is None or began < self._first_unstable:
                self._first_unstable = began
        if completed is None:
            return -1
        others = [first for first, pid in self.ongoing.items() if pid != producer_id]
        last_stable = min(others) if others else completed.last_offset + 1
        self.ongoing.pop(completed.first_offset, None)
        if completed.first_offset == self._first_unstable:
            self._first_unstable = min(self.ongoing) if self.ongoing else None
        return last_stable

    def failed(self) -> None:
        self.pending.clear()

    def load(self, entries: dict[int, ProducerEntry]) -> None:
        """Start from a snapshot's producers (`ProducerStateManager.loadProducerEntry`)."""
        self.durable = dict(entries)
        self.pending.clear()
        self.ongoing = {
            e.current_txn_first_offset: pid for pid, e in entries.items() if e.current_txn_first_offset >= 0
        }
        self._first_unstable = min(self.ongoing) if self.ongoing else None

    def remove_expired(self, now_ms: int, expiration_ms: int) -> None:
        """ProducerStateManager.removeExpiredProducers: idle producers are forgotten, never one with an
        open transaction (KAFKA-9144: its coordinator epoch and the LSO would be lost)."""
        for producer_id, entry in list(self.durable.items()):
            if entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= expiration_ms:
                del self.durable[producer_id]

    def rows(self) -> list[ProducerStateRow]:
        current = {**self.durable, **self.pending}
        return [
            ProducerStateRow(
                pid,
                e.epoch,
                e.last_sequence,
                e.last_timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            for pid, e in sorted(current.items())
        ]


def replay_batch(
    producers: ProducerStates, header: BatchHeader, read_batch: Callable[[], bytes]
) -> AbortedTxn | None:
    """Apply one durable batch found in the log (recovery, verify): the aborted-transaction index entry
    it adds, if it is the ABORT marker of a transaction with data (`LogSegment.updateProducerState`)."""
    if header.producer_id < 0:
        return None
    completed = None
    if header.is_control:
        marker = read_end_txn_marker(read_batch())
        if marker is None:
            return None
        timestamp = header.max_timestamp if header.log_append_time else header.base_timestamp
        entry, completed = producers.marker_updated(
            header.producer_id, header.producer_epoch, marker.commit, marker.coordinator_epoch,
            header.base_offset, timestamp,
        )  # fmt: skip
    else:
        updated = producers.updated(header, header.base_offset, header.max_timestamp)
        assert updated is not None
        entry = updated
    last_stable = producers.make_durable(header.producer_id, entry, completed)
    if completed is None or not completed.is_aborted:
        return None
    return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, last_stable)
