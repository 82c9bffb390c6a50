"""Idempotent producers' state per partition: Kafka's `ProducerStateManager` / `ProducerAppendInfo`.

For each producer id the epoch and the last five batches (first and last sequence, first and last
offset) are kept. A batch matching one of them is a duplicate (answered with its original offset); a
batch whose first sequence does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER; an older
epoch is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0. The state is rebuilt from the
log on recovery, so a batch retried across a restart is still recognised.

Appends not yet durable are *pending*: they count for the checks (a retry racing the first write is a
duplicate) and are dropped if the write fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import ErrorCode
from protocol.record_batch import BatchHeader

__all__ = ["ProducerEntry", "ProducerStates"]

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_INT32_MAX = (1 << 31) - 1
Batch = tuple[int, int, int, int]  # first sequence, last sequence, first offset, last offset


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    epoch: int
    batches: tuple[Batch, ...]


def _last_sequence(header: BatchHeader) -> int:
    """Sequences wrap at INT32_MAX (DefaultRecordBatch.incrementSequence)."""
    last = header.base_sequence + header.last_offset_delta
    return last - _INT32_MAX - 1 if last > _INT32_MAX else last


def _next_sequence(sequence: int) -> int:
    return 0 if sequence == _INT32_MAX else sequence + 1


class ProducerStates:
    def __init__(self) -> None:
        self.durable: dict[int, ProducerEntry] = {}
        self.pending: dict[int, ProducerEntry] = {}

    def current(self, producer_id: int) -> ProducerEntry | None:
        return self.pending.get(producer_id) or self.durable.get(producer_id)

    def check(self, header: BatchHeader) -> tuple[ErrorCode, int]:
        """(NONE, -1) to append, (NONE, offset) for a duplicate, or (error, -1)."""
        if header.producer_id < 0:
            return ErrorCode.NONE, -1
        entry = self.current(header.producer_id)
        first, last = header.base_sequence, _last_sequence(header)
        if entry is None:
            return (ErrorCode.NONE, -1) if first == 0 else (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        if header.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH, -1
        if header.producer_epoch > entry.epoch:
            return (ErrorCode.NONE, -1) if first == 0 else (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        for batch_first, batch_last, offset, _ in entry.batches:
            if (batch_first, batch_last) == (first, last):
                return ErrorCode.NONE, offset
        if entry.batches and first != _next_sequence(entry.batches[-1][1]):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return ErrorCode.NONE, -1

    def updated(self, header: BatchHeader, base_offset: int) -> ProducerEntry | None:
        """The producer's entry once this batch (now at `base_offset`) is in the log."""
        if header.producer_id < 0:
            return None
        entry = self.current(header.producer_id)
        batch = (
            header.base_sequence,
            _last_sequence(header),
            base_offset,
            base_offset + header.last_offset_delta,
        )
        if entry is None or entry.epoch != header.producer_epoch:
            return ProducerEntry(header.producer_epoch, (batch,))
        return ProducerEntry(entry.epoch, (*entry.batches, batch)[-NUM_BATCHES_TO_RETAIN:])
