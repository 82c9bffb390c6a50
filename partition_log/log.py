"""PartitionLog: one partition's records; PartitionLogs: every partition of a data directory, one writer.

Offsets are assigned when a batch is appended (so order holds), the batch is written verbatim with
only its base offset patched (and, under LogAppendTime, its max timestamp and CRC), and the high
watermark moves once the write is durable under the fsync policy: under `always` one fsync round
covers every batch of every partition that arrived meanwhile (group commit). A failed write is
truncated back, fails everything still pending, and leaves the log as it was before it.
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

import crc32c

from partition_log.config import PartitionConfig
from partition_log.producers import ProducerEntry, ProducerStates
from partition_log.segment import BatchInfo, Segment, segment_name
from partition_log.validation import AppendError, DuplicateAppend, ValidatedAppend, check_batch
from protocol.errors import ErrorCode
from protocol.record_batch import CRC_START, TIMESTAMP_TYPE_BIT, BatchHeader, iter_records, read_header
from storage.files import FileOps

__all__ = ["AppendResult", "PartitionLog", "ReadResult"]

log = logging.getLogger("kcoord.partition_log")

LOG_START_FILE = "log-start-offset"
_OFFSET = struct.Struct(">q")
# producer.id.expiration.ms: Kafka forgets an idle producer's state after a day, so a sealed segment
# whose records are all older than that holds no producer state worth rebuilding at startup.
PRODUCER_ID_EXPIRATION_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: bytes
    high_watermark: int
    log_start_offset: int


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
    append_time_ms: int = -1
    segment: Segment | None = field(default=None)
    position: int = 0


class PartitionLog:
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
        self.log_start_offset = 0
        self.high_watermark = 0
        self.log_end_offset = 0
        self.producers = ProducerStates()
        self._listeners: list[Callable[[], None]] = []

    # -- opening -------------------------------------------------------------------------------------------
    def recover(self, now_ms: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        paths = sorted(self.directory.glob("*.log"))
        checkpoint = self.directory / LOG_START_FILE
        start = _OFFSET.unpack(checkpoint.read_bytes())[0] if checkpoint.exists() else None
        expected = int(paths[0].stem) if paths else (start or 0)
        for index, path in enumerate(paths):
            segment = Segment(path, int(path.stem), now_ms)
            sealed = index < len(paths) - 1
            if sealed and segment.open_sealed(expected):
                if segment.max_timestamp >= now_ms - PRODUCER_ID_EXPIRATION_MS:
                    for _, header in segment.headers_from(0):
                        self._replay_producer(header)
            else:
                for header in segment.recover(expected, sealed=sealed):
                    self._replay_producer(header)
                if sealed:  # recovered by a full scan: write its index files again
                    segment.write_index_files(self.config.index_interval_bytes)
                    segment.become_sparse(self.config.index_interval_bytes)
            expected = segment.next_offset
            self.segments.append(segment)
        self.log_end_offset = self.high_watermark = expected
        first = self.segments[0].base_offset if self.segments else expected
        self.log_start_offset = max(first, start or 0)

    def _replay_producer(self, header: BatchHeader) -> None:
        entry = self.producers.updated(header, header.base_offset)
        if entry is not None:
            self.producers.durable[header.producer_id] = entry

    # -- writing ---------------------------------------------------------------------------------------------
    def validate(self, records: bytes, now_ms: int) -> ValidatedAppend | DuplicateAppend | AppendError:
        checked = check_batch(records, self.config, now_ms)
        if isinstance(checked, AppendError):
            return checked
        error, duplicate_of = self.producers.check(checked.header)
        if error is not ErrorCode.NONE:
            return AppendError(error, f"{error.name} for producer {checked.header.producer_id}")
        if duplicate_of >= 0:
            return DuplicateAppend(duplicate_of)
        return checked

    def append(self, validated: ValidatedAppend, now_ms: int | None = None) -> asyncio.Future[AppendResult]:
        header = validated.header
        now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        base = self.log_end_offset
        data = bytearray(validated.data)
        data[0:8] = _OFFSET.pack(base)
        data[12:16] = struct.pack(">i", 0)  # partitionLeaderEpoch: this node leads in epoch 0
        max_timestamp, append_time = header.max_timestamp, -1
        if self.config.message_timestamp_type == "LogAppendTime":
            append_time = max_timestamp = now_ms
            attributes = header.attributes | TIMESTAMP_TYPE_BIT
            struct.pack_into(">h", data, CRC_START, attributes)
            struct.pack_into(">q", data, 35, now_ms)  # maxTimestamp
            struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[CRC_START:])))
        self.log_end_offset = base + header.last_offset_delta + 1
        entry = self.producers.updated(header, base)
        producer = None
        if entry is not None:
            self.producers.pending[header.producer_id] = entry
            producer = (header.producer_id, entry)
        future: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        pending = Pending(
            self, bytes(data), base, self.log_end_offset - 1, max_timestamp, producer, future, append_time
        )
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
        pending.segment.index(read_header(pending.data), pending.position)
        self.high_watermark = pending.last_offset + 1
        for segment in [s for s in self._unsealed if s.durable_end == s.size]:
            self._unsealed.remove(segment)  # every batch of it is durable: write its index files
            self._background(self._seal(segment))
        if pending.producer is not None:
            producer_id, entry = pending.producer
            self.producers.durable[producer_id] = entry
            if self.producers.pending.get(producer_id) is entry:
                del self.producers.pending[producer_id]
        pending.future.set_result(
            AppendResult(pending.base_offset, pending.append_time_ms, self.log_start_offset)
        )

    async def _seal(self, segment: Segment) -> None:
        interval = self.config.index_interval_bytes
        try:
            await asyncio.to_thread(segment.write_index_files, interval)
        except OSError as exc:
            # Index files are derived data: the batches are durable, the segment keeps its dense
            # index in memory, and the next start rebuilds files that are missing or do not fit.
            log.warning("index files of %s not written (rebuilt at the next start): %s", segment.path, exc)
            return
        if segment in self.segments:  # not deleted by retention meanwhile
            segment.become_sparse(interval)

    def failed(self) -> None:
        """A write failed: everything not durable is gone (the files were cut back already)."""
        self.log_end_offset = self.high_watermark
        self.producers.pending.clear()
        for segment in self.segments:
            segment.size = segment.durable_end

    def notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    # -- reading ---------------------------------------------------------------------------------------------
    def add_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def read(self, offset: int, max_bytes: int) -> ReadResult | None:
        """Whole batches from the one holding `offset`, up to `max_bytes` but at least one (KIP-74)."""
        if offset < self.log_start_offset or offset > self.high_watermark:
            return None
        empty = ReadResult(b"", self.high_watermark, self.log_start_offset)
        if offset == self.high_watermark:
            return empty
        segment = self._segment_for(offset)
        first = segment.find(offset) if segment is not None else None
        if segment is None or first is None:
            return empty
        total = 0
        for batch in segment.batches_from(first.position):
            if batch.base_offset >= self.high_watermark or (total and total + batch.size > max_bytes):
                break
            total += batch.size
        return ReadResult(segment.read(first.position, total), self.high_watermark, self.log_start_offset)

    def _segment_for(self, offset: int) -> Segment | None:
        candidates = [s for s in self.segments if s.base_offset <= offset and not s.empty]
        return candidates[-1] if candidates else None

    def _live_segments(self) -> list[Segment]:
        return [s for s in self.segments if not s.empty and s.next_offset > self.log_start_offset]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp`: the time index, then the
        batches after its entry (Kafka's `LogSegment.findOffsetByTimestamp`)."""
        for segment in self._live_segments():
            if segment.max_timestamp < timestamp:
                continue
            for batch in segment.batches_from(segment.time_start_position(timestamp)):
                if batch.max_timestamp < timestamp or batch.last_offset < self.log_start_offset:
                    continue
                for record in iter_records(segment.read(batch.position, batch.size)):
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (the first such, ListOffsets v7)."""
        live = self._live_segments()
        if not live:
            return None
        best = max(live, key=lambda s: s.max_timestamp)  # the first segment holding the maximum
        target = best.max_timestamp
        found: BatchInfo | None = None
        for batch in best.batches_from(best.time_start_position(target)):
            if batch.max_timestamp == target and batch.last_offset >= self.log_start_offset:
                found = batch
                break
        if found is None:
            return None
        for record in iter_records(best.read(found.position, found.size)):
            if record.timestamp == target and record.offset >= self.log_start_offset:
                return record.offset, record.timestamp
        return found.last_offset, target

    # -- log start and retention ---------------------------------------------------------------------------
    async def move_log_start(self, offset: int) -> int:
        """DeleteRecords and retention: a durable new log start; whole segments below it are deleted."""
        if offset <= self.log_start_offset:
            return self.log_start_offset
        await asyncio.to_thread(_write_checkpoint, self.directory, offset)
        self.log_start_offset = offset
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            doomed = self.segments.pop(0)
            doomed.remove()
        return offset

    def delete_records(self, before_offset: int) -> asyncio.Future[int]:
        if before_offset > self.high_watermark:
            raise ValueError(f"offset {before_offset} is above the high watermark {self.high_watermark}")
        return asyncio.ensure_future(self.move_log_start(before_offset))

    def expired_start(self, now_ms: int) -> int | None:
        """The log start retention asks for, if it moves (Kafka's deleteRetentionMs/SizeBreachedSegments)."""
        sealed = [s for s in self.segments[:-1] if not s.empty]
        total = sum(s.size for s in self.segments)
        start = None
        for segment in sealed:
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
