"""PartitionLog: one partition's records; PartitionLogs: every partition of a data directory, one writer.

Offsets are assigned when a batch is appended (so order holds), the batch is written verbatim with
only its base offset patched (and, under LogAppendTime, its max timestamp and CRC), and the high
watermark moves once the write is durable under the fsync policy: under `always` one fsync round
covers every batch of every partition that arrived meanwhile (group commit). A failed write is
truncated back, fails everything still pending, and leaves the log as it was before it.

Transactions (Kafka's `UnifiedLog`): a transactional batch opens its producer's transaction, a COMMIT or
ABORT control batch (`append_marker`, written through the same writer) closes it; the last stable offset
is the first offset of the oldest transaction still open in the durable log, or the high watermark
(`lastStableOffset`). A READ_COMMITTED read stops there and lists the aborted transactions overlapping
what it returns (`collectAbortedTransactions`); an aborted transaction with data gets a `.txnindex`
entry in its marker's segment once the marker is durable.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from kcoord.partition_log import timestamps
from kcoord.partition_log.config import PartitionConfig
from kcoord.partition_log.producers import CompletedTxn, ProducerEntry, ProducerStateRow, ProducerStates
from kcoord.partition_log.recovery import LOG_START_FILE, read_log_start, recover_segments
from kcoord.partition_log.results import READ_COMMITTED, READ_UNCOMMITTED, AppendResult, ReadResult
from kcoord.partition_log.segment import Segment, segment_name
from kcoord.partition_log.snapshots import write_snapshot
from kcoord.partition_log.stamp import stamp
from kcoord.partition_log.txn_index import AbortedTxn, collect_aborted
from kcoord.partition_log.validation import (
    AppendError,
    DuplicateAppend,
    ValidatedAppend,
    check_append,
    marker_append,
)
from kcoord.protocol.record_batch import EndTransactionMarker, ProducedBatch, read_header
from kcoord.storage.files import FileOps

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "AppendResult", "PartitionLog", "ReadResult"]

log = logging.getLogger("kcoord.partition_log")

_OFFSET = struct.Struct(">q")
# producer.id.expiration.ms: Kafka forgets an idle producer's state after a day (never one with an
# open transaction).
PRODUCER_ID_EXPIRATION_MS = 86_400_000


@dataclass(slots=True)
class Pending:
    """A batch with its offsets assigned, on its way to disk."""

    log: PartitionLog
    data: bytes
    base_offset: int
    last_offset: int
    max_timestamp: int
    producer: tuple[int, ProducerEntry] | None
    future: asyncio.Future[AppendResult]
    completed: CompletedTxn | None = None  # the transaction a marker ends
    append_time_ms: int = -1
    segment: Segment | None = field(default=None)
    position: int = 0


class PartitionLog:
    leader_epoch = 0  # one node leads every partition for ever (partition_log/epochs.py)

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: PartitionConfig,
        submit: Callable[[Pending], None],
        background: Callable[[Awaitable[object]], None] | None = None,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self._submit = submit
        self._background = background or asyncio.ensure_future
        self.segments: list[Segment] = []
        self._unsealed: list[Segment] = []  # rolled away from, index files not written yet
        # The producer snapshots taken at segment ends and not on disk yet (offset -> state), written by
        # one writer at a time: the seal of the segment, or a log start move deleting it (whichever first).
        self._snapshots_due: dict[int, dict[int, ProducerEntry]] = {}
        self._snapshot_lock = asyncio.Lock()
        self.log_start_offset = 0
        self.high_watermark = 0
        self.log_end_offset = 0
        self.producers = ProducerStates()
        self._listeners: list[Callable[[], None]] = []

    # -- opening -------------------------------------------------------------------------------------------
    def recover(self, now_ms: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        start = read_log_start(self.directory)
        self.segments = recover_segments(self.directory, self.config, self.producers, now_ms)
        end = self.segments[-1].next_offset if self.segments else (start or 0)
        self.log_end_offset = self.high_watermark = end
        first = self.segments[0].base_offset if self.segments else end
        self.log_start_offset = max(first, start or 0)
        self.producers.remove_expired(now_ms, PRODUCER_ID_EXPIRATION_MS)

    # -- writing ---------------------------------------------------------------------------------------------
    def validate(
        self, records: bytes | ProducedBatch, now_ms: int
    ) -> ValidatedAppend | DuplicateAppend | AppendError:
        return check_append(records, self.config, self.producers, now_ms)

    def append(self, validated: ValidatedAppend, now_ms: int | None = None) -> asyncio.Future[AppendResult]:
        return self._append(validated, now_ms, None)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int | None = None,
    ) -> asyncio.Future[AppendResult] | AppendError:
        """Write a COMMIT or ABORT control batch for the producer's transaction (Kafka's WriteTxnMarkers
        append, `ProducerAppendInfo.appendEndTxnMarker`). A producer without an open transaction still
        gets its marker (an empty transaction), which completes nothing."""
        now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        made = marker_append(self.producers, producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        if isinstance(made, AppendError):
            return made
        return self._append(made[0], now_ms, made[1])

    def _append(
        self, validated: ValidatedAppend, now_ms: int | None, marker: EndTransactionMarker | None
    ) -> asyncio.Future[AppendResult]:
        header = validated.header
        now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        base = self.log_end_offset
        # partitionLeaderEpoch 0: this node leads every partition in epoch 0
        data, max_timestamp, append_time = stamp(validated.data, header, base, self.config, now_ms)
        self.log_end_offset = base + header.last_offset_delta + 1
        entry, completed = self.producers.stage(header, marker, base, max_timestamp)
        producer = None if entry is None else (header.producer_id, entry)
        future: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        last = self.log_end_offset - 1
        pending = Pending(self, data, base, last, max_timestamp, producer, future, completed, append_time)
        self._submit(pending)
        return future

    def place(self, pending: Pending, now_ms: int) -> None:
        """Choose the segment and position of a batch, rolling by size and age (`LogSegment.shouldRoll`)."""
        active = self.segments[-1] if self.segments else None
        if (
            active is not None
            and active.size
            and (
                active.size + len(pending.data) > self.config.segment_bytes
                or now_ms - active.created_ms > self.config.segment_ms
            )
        ):
            active = None
        if active is None:
            if self.segments:
                self._unsealed.append(self.segments[-1])
            base = pending.base_offset
            active = Segment(self.directory / segment_name(base), base, now_ms)
            self.segments.append(active)
        pending.segment = active
        pending.position = active.size
        active.size += len(pending.data)

    def written(self, pending: Pending) -> None:
        """The batch is durable: index it, move the high watermark, wake waiting fetches."""
        assert pending.segment is not None
        self._seal_completed()  # segments rolled away from after their last batch: the state is theirs
        pending.segment.index(read_header(pending.data), pending.position)
        self.high_watermark = pending.last_offset + 1
        if pending.producer is not None:
            producer_id, entry = pending.producer
            completed = pending.completed
            last_stable = self.producers.make_durable(producer_id, entry, completed)
            if completed is not None and completed.is_aborted:  # LogSegment.updateTxnIndex
                pending.segment.aborted.append(
                    AbortedTxn(producer_id, completed.first_offset, completed.last_offset, last_stable)
                )
        self._seal_completed()  # the segment this batch completed, if it was rolled away from
        pending.future.set_result(
            AppendResult(pending.base_offset, pending.append_time_ms, self.log_start_offset)
        )

    def _seal_completed(self) -> None:
        """Every batch of a segment rolled away from is durable: write its index files and the producer
        snapshot at its end (the durable state now is the state after its last batch)."""
        for segment in [s for s in self._unsealed if s.durable_end == s.size]:
            self._unsealed.remove(segment)
            self._snapshots_due[segment.next_offset] = dict(self.producers.durable)
            self._background(self._seal(segment, segment.next_offset))

    async def _seal(self, segment: Segment, end: int) -> None:
        interval = self.config.index_interval_bytes
        try:
            await asyncio.to_thread(segment.write_index_files, interval)
            # Even if retention deleted the segment meanwhile: the state at its end is the next one's start.
            await self._write_due_snapshot(end)
        except OSError as exc:
            # Index files are derived data: the batches are durable, the segment keeps its dense
            # index in memory, and the next start rebuilds files that are missing or do not fit.
            log.warning("index files of %s not written (rebuilt at the next start): %s", segment.path, exc)
            return
        if segment in self.segments:  # not deleted by retention meanwhile
            segment.become_sparse(interval)

    async def _write_due_snapshot(self, offset: int) -> None:
        """Write the snapshot taken at `offset` if it is not on disk yet (OSError: it stays due)."""
        async with self._snapshot_lock:
            producers = self._snapshots_due.get(offset)
            if producers is not None:
                await asyncio.to_thread(write_snapshot, self.directory, offset, producers)
                self._snapshots_due.pop(offset, None)

    def failed(self) -> None:
        """A write failed: everything not durable is gone (the files were cut back already)."""
        self.log_end_offset = self.high_watermark
        self.producers.failed()
        for segment in self.segments:
            segment.size = segment.durable_end
        while len(self.segments) > 1 and self.segments[-1].base_offset > self.log_end_offset:
            self.segments.pop().remove()  # rolled to by the failed round: empty, named past the end
            if self.segments[-1] in self._unsealed:  # recovery also drops such a file (recovery.py)
                self._unsealed.remove(self.segments[-1])
        # A segment rolled away from by the failed round is whole: its snapshot is due now, not at the
        # next write (which may never come before DeleteRecords deletes it).
        self._seal_completed()

    def notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    # -- reading ---------------------------------------------------------------------------------------------
    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (None: none open)."""
        return self.producers.first_unstable_offset

    @property
    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset: the first unstable offset when below the high watermark (never
        below the log start, `maybeIncrementFirstUnstableOffset`), else the high watermark."""
        first_unstable = self.producers.first_unstable_offset
        if first_unstable is None or first_unstable >= self.high_watermark:
            return self.high_watermark
        return max(first_unstable, self.log_start_offset)

    def read(
        self,
        offset: int,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        max_offset: int | None = None,
    ) -> ReadResult | None:
        """Whole batches from the one holding `offset`, up to `max_bytes` but at least one (KIP-74), below
        the high watermark, or under READ_COMMITTED below the last stable offset with the aborted
        transactions they overlap (`UnifiedLog.read` with FetchIsolation.TXN_COMMITTED); with
        `max_offset`, none after the first batch reaching it."""
        high_watermark, log_start = self.high_watermark, self.log_start_offset
        if offset < log_start or offset > high_watermark:
            return None
        last_stable = self.last_stable_offset
        committed = isolation_level == READ_COMMITTED
        limit = last_stable if committed else high_watermark
        empty = ReadResult(b"", high_watermark, log_start, last_stable, [] if committed else None)
        if offset >= limit:
            return empty
        index = self._segment_index(offset)
        segment = self.segments[index] if index is not None else None
        first = segment.find(offset) if segment is not None else None
        if segment is None or first is None:
            return empty
        total, end = 0, offset
        for batch in segment.batches_from(first.position):
            if batch.base_offset >= limit or (
                total and (total + batch.size > max_bytes or (max_offset is not None and end > max_offset))
            ):
                break
            total, end = total + batch.size, batch.last_offset + 1
        aborted = None
        if committed:  # the exact end of what is returned bounds the search (Kafka: the next index entry)
            aborted = (
                collect_aborted((s.aborted for s in self.segments[index:]), offset, end) if total else []
            )
        return ReadResult(
            segment.read(first.position, total), high_watermark, log_start, last_stable, aborted
        )

    def _segment_index(self, offset: int) -> int | None:
        found = None
        for i, segment in enumerate(self.segments):
            if segment.base_offset > offset:
                break
            if not segment.empty:
                found = i
        return found

    def epoch_history(self) -> list[tuple[int, int]]:
        return [(self.leader_epoch, self.log_start_offset)]

    def batch_max_timestamp(self, offset: int) -> int:
        """The max timestamp of the batch holding `offset` (through the sealed segments' sparse index)."""
        for segment in reversed(self.segments):
            if segment.base_offset <= offset and not segment.empty:
                batch = segment.find(offset)
                return batch.max_timestamp if batch is not None else -1
        return -1

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return timestamps.offset_for_timestamp(self.segments, self.log_start_offset, timestamp)

    def max_timestamp(self) -> tuple[int, int] | None:
        return timestamps.max_timestamp(self.segments, self.log_start_offset)

    # -- transactions and producers ------------------------------------------------------------------------
    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """UnifiedLog.hasOngoingTransaction (KIP-890: such a producer needs no verification)."""
        return self.producers.has_ongoing_transaction(producer_id)

    def producer_states(self) -> list[ProducerStateRow]:
        """DescribeProducers' rows (`UnifiedLog.activeProducers`), appends not yet durable included."""
        return self.producers.rows()

    def remove_expired_producers(self, now_ms: int) -> None:
        self.producers.remove_expired(now_ms, PRODUCER_ID_EXPIRATION_MS)

    # -- log start and retention ---------------------------------------------------------------------------
    async def move_log_start(self, offset: int) -> int:
        """DeleteRecords and retention: a durable new log start; whole segments below it are deleted.
        Never past the first unstable offset: an open transaction keeps its start (issue 24; Kafka
        bounds both only by the high watermark and lets the log start pass an open transaction)."""
        first_unstable = self.producers.first_unstable_offset
        if first_unstable is not None:
            offset = min(offset, first_unstable)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        keep = await self._snapshot_at_new_start(offset)
        await asyncio.to_thread(_write_checkpoint, self.directory, offset)
        self.log_start_offset = offset
        while keep and len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            doomed = self.segments.pop(0)
            doomed.remove()
            self._snapshots_due.pop(doomed.base_offset, None)
        return offset

    async def _snapshot_at_new_start(self, offset: int) -> bool:
        """The producer snapshot at the first kept segment's base is on disk before the segments below
        it (and their snapshots) go: producers outlive their batches until producer-id expiration and
        recovery starts there. Kafka (core/.../log/UnifiedLog.scala): `roll` takes that snapshot,
        `deleteSegments` deletes only the deleted bases' snapshots, and ProducerStateManager.java's
        `onLogStartOffsetIncremented` keeps every producer. False: not written, the segments stay."""
        self._seal_completed()  # a segment whose last batch is durable: its end state is due now
        new_first = [s.base_offset for s in self.segments[1:] if s.base_offset <= offset]
        if not new_first:  # no segment is deleted
            return True
        try:
            await self._write_due_snapshot(new_first[-1])
        except OSError as exc:
            log.warning("producer snapshot before %s not written; its segments stay: %s", offset, exc)
            return False
        return True

    def delete_records(self, before_offset: int) -> asyncio.Future[int]:
        if before_offset > self.high_watermark:
            raise ValueError(f"offset {before_offset} is above the high watermark {self.high_watermark}")
        return asyncio.ensure_future(self.move_log_start(before_offset))

    @property
    def size(self) -> int:
        """Bytes of the log's segment files, indexes not counted (Kafka's UnifiedLog.size, which
        DescribeLogDirs reports); a batch counts from when its place in the segment is reserved."""
        return sum(s.size for s in self.segments)

    def expired_start(self, now_ms: int) -> int | None:
        """The log start retention asks for, if it moves (Kafka's deleteRetentionMs/SizeBreachedSegments)."""
        sealed = [s for s in self.segments[:-1] if not s.empty]
        total = sum(s.size for s in self.segments)
        start = None
        first_unstable = self.producers.first_unstable_offset
        bound = self.high_watermark if first_unstable is None else min(first_unstable, self.high_watermark)
        for segment in sealed:
            if segment.next_offset > bound:  # an open transaction (or a write in flight) starts in it
                break
            by_time = (
                self.config.retention_ms >= 0 and now_ms - segment.max_timestamp > self.config.retention_ms
            )
            by_size = self.config.retention_bytes >= 0 and total - segment.size >= self.config.retention_bytes
            if not (by_time or by_size):
                break
            total -= segment.size
            start = segment.next_offset
        return start if start is not None and start > self.log_start_offset else None

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def remove_files(self) -> None:
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _write_checkpoint(directory: Path, offset: int) -> None:
    FileOps().write_file_atomically(directory / LOG_START_FILE, _OFFSET.pack(offset))
