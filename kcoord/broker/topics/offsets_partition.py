"""One partition of `__consumer_offsets` (kcoord/broker/topics/offsets_topic.py): its records at the
coordinator log's positions, read as Kafka's partitions are read (the `PartitionStore` calls Fetch,
ListOffsets and the Produce / DeleteRecords checks make), and compacted by key as Kafka's cleaner
compacts them. Every write is refused: the view is fed by the coordinator log alone."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable

from kcoord.coordinator.persistence.offsets_topic_records import (
    OFFSETS_TOPIC,
    TopicEntry,
    encode_batch,
    encode_empty_batch,
    marker_key,
    marker_value,
)
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.producers import ProducerStateRow
from kcoord.partition_log.results import READ_COMMITTED, AppendResult, ReadResult
from kcoord.partition_log.validation import AppendError, DuplicateAppend, ValidatedAppend
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import ProducedBatch

__all__ = ["OffsetsPartition"]

_BATCH_RECORDS = 500  # plain records per batch on the wire
# A batch's lastOffsetDelta is an INT32: records further apart (cluster mode's lsns jump by 2**40 at an
# owner's new epoch) go in separate batches, and an empty batch covers at most this much of a gap.
_MAX_DELTA = (1 << 31) - 1


def _refused() -> AppendError:
    return AppendError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {OFFSETS_TOPIC}")


class OffsetsPartition:
    """One partition of the view: what Fetch, ListOffsets and the Produce/DeleteRecords checks call
    (the `PartitionStore` port); every write is refused."""

    leader_epoch = 0  # not the shard's lease epoch: its offsets already carry that (docs/compat.md)

    def __init__(self, partition: int) -> None:
        self.topic = OFFSETS_TOPIC
        self.partition = partition
        self.config = PartitionConfig()
        self.log_start_offset = 0
        self.high_watermark = 0
        self.log_end_offset = 0  # always the high watermark: the view is durable when it is told
        self._entries: list[TopicEntry] = []
        self._offsets: list[int] = []  # the entries' offsets, for bisect
        self._newest: dict[bytes, int] = {}  # key -> offset of its newest plain record
        self._open: dict[int, tuple[int, int]] = {}  # producer -> (first offset, epoch) of its open txn
        self._aborted: list[tuple[int, int, int]] = []  # (producer, first offset, marker offset)
        self._listeners: list[Callable[[], None]] = []

    # -- the view's own writes ------------------------------------------------------------------------
    def add(self, entry: TopicEntry) -> None:
        self._entries.append(entry)
        self._offsets.append(entry.offset)
        self.high_watermark = self.log_end_offset = entry.offset + 1
        if entry.producer_id >= 0 and not entry.control:
            self._open.setdefault(entry.producer_id, (entry.offset, entry.producer_epoch))
        elif not entry.control:
            self._newest[entry.key] = entry.offset

    def end_transaction(self, producer_id: int, commit: bool, offset: int, timestamp: int) -> None:
        """The marker of the producer's open transaction here (none open: nothing to mark)."""
        opened = self._open.pop(producer_id, None)
        if opened is None:
            return
        first, epoch = opened
        self.add(TopicEntry(offset, timestamp, marker_key(commit), marker_value(), producer_id, epoch, True))
        if not commit:
            self._aborted.append((producer_id, first, offset))

    def wake(self) -> None:
        for callback in list(self._listeners):
            callback()

    def compact(self) -> None:
        """Kafka's cleaner: drop a plain record a newer one of its key replaced; a finished
        transaction's records and marker go once a plain record of the key replaced them."""
        if len(self._entries) < 2 * len(self._newest) + 64:
            return
        lso = self.last_stable_offset
        kept = [e for e in self._entries if self._keep(e, lso)]
        self._entries = kept
        self._offsets = [e.offset for e in kept]
        present = set(self._offsets)
        self._aborted = [a for a in self._aborted if a[2] in present]

    def _keep(self, entry: TopicEntry, lso: int) -> bool:
        if entry.offset >= lso:
            return True
        if entry.control:
            return any(a[2] == entry.offset for a in self._aborted)
        newest = self._newest.get(entry.key)
        return newest is None or newest <= entry.offset

    # -- reads ----------------------------------------------------------------------------------------
    @property
    def first_unstable_offset(self) -> int | None:
        return min((first for first, _ in self._open.values()), default=None)

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset
        return self.high_watermark if first is None else first

    def read(
        self, offset: int, max_bytes: int, isolation_level: int = 0, max_offset: int | None = None
    ) -> ReadResult | None:
        """Whole batches from `offset` up to the high watermark (the last stable offset read
        committed), at least one batch whatever `max_bytes` (KIP-74), none after the first batch
        reaching `max_offset`; None: out of range."""
        if offset < self.log_start_offset or offset > self.high_watermark:
            return None
        end = self.last_stable_offset if isolation_level == READ_COMMITTED else self.high_watermark
        start = bisect.bisect_left(self._offsets, offset)
        stop = bisect.bisect_left(self._offsets, end)
        chunks: list[bytes] = []
        size, index = 0, start
        while index < stop and (
            not chunks or (size < max_bytes and (max_offset is None or self._offsets[index - 1] < max_offset))
        ):
            run = self._run(index, stop)
            chunks.append(encode_batch(self._entries[index : index + run]))
            size += len(chunks[-1])
            index += run
        if index == stop and (tail := self._tail_start(index, offset)) < end:
            # Records the log dropped left no record before `end` (a restart ends every partition at the
            # log's next position): an empty batch takes the reader's position there, as Kafka's cleaned
            # batches keep their last offset.
            timestamp = self._entries[index - 1].timestamp if index else 0
            chunks.append(encode_empty_batch(max(tail, end - 1 - _MAX_DELTA), end - 1, timestamp))
        aborted = None
        if isolation_level == READ_COMMITTED:
            read_end = self._offsets[index - 1] if index > start else offset
            aborted = [(p, first) for p, first, last in self._aborted if last >= offset and first <= read_end]
        hw, lso = self.high_watermark, self.last_stable_offset
        return ReadResult(b"".join(chunks), hw, self.log_start_offset, lso, aborted)

    def _tail_start(self, index: int, offset: int) -> int:
        """Where the gap after the last record read (or from `offset`, none read) begins."""
        return max(offset, self._offsets[index - 1] + 1) if index else offset

    def _run(self, index: int, stop: int) -> int:
        """How many entries from `index` share one batch: one producer's, or plain ones."""
        first = self._entries[index]
        if first.control:
            return 1
        run = 1
        while index + run < stop and run < _BATCH_RECORDS:
            nxt = self._entries[index + run]
            if nxt.control or nxt.producer_id != first.producer_id or nxt.offset - first.offset > _MAX_DELTA:
                break
            run += 1
        return run

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for entry in self._entries:
            if entry.timestamp >= timestamp and not entry.control:
                return entry.offset, entry.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best = max(self._entries, key=lambda e: e.timestamp, default=None)
        return None if best is None else (best.offset, best.timestamp)

    def epoch_history(self) -> list[tuple[int, int]]:
        return [(self.leader_epoch, self.log_start_offset)]

    def batch_max_timestamp(self, offset: int) -> int:
        index = bisect.bisect_left(self._offsets, offset)
        return self._entries[index].timestamp if index < len(self._entries) else -1

    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    # -- refused writes (the PartitionStore port) -----------------------------------------------------
    def validate(
        self, records: bytes | ProducedBatch, now_ms: int
    ) -> ValidatedAppend | DuplicateAppend | AppendError:
        return _refused()

    def append(self, validated: ValidatedAppend, now_ms: int | None = None) -> asyncio.Future[AppendResult]:
        raise AssertionError("validate refuses every append to __consumer_offsets")

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> asyncio.Future[AppendResult] | AppendError:
        return _refused()

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return producer_id in self._open

    def producer_states(self) -> list[ProducerStateRow]:
        return []

    def remove_expired_producers(self, now_ms: int) -> None:
        return None

    async def move_log_start(self, offset: int) -> int:
        return self.log_start_offset

    def delete_records(self, before_offset: int) -> asyncio.Future[int]:
        raise AssertionError("DeleteRecords refuses __consumer_offsets before it reaches a partition")

    @property
    def size(self) -> int:
        return sum(len(e.key) + len(e.value or b"") for e in self._entries)

    def expired_start(self, now_ms: int) -> int | None:
        return None
