"""Timestamp lookups of a partition log, for ListOffsets: the first record at or after a timestamp
(Kafka's `LogSegment.findOffsetByTimestamp`) and the record with the largest timestamp (v7)."""

from __future__ import annotations

from kcoord.partition_log.segment import BatchInfo, Segment
from kcoord.protocol.record_batch import iter_records

__all__ = ["max_timestamp", "offset_for_timestamp"]


def _live(segments: list[Segment], log_start: int) -> list[Segment]:
    return [s for s in segments if not s.empty and s.next_offset > log_start]


def offset_for_timestamp(segments: list[Segment], log_start: int, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after `timestamp`: the time index, then the
    batches after its entry."""
    for segment in _live(segments, log_start):
        if segment.max_timestamp < timestamp:
            continue
        for batch in segment.batches_from(segment.time_start_position(timestamp)):
            if batch.max_timestamp < timestamp or batch.last_offset < log_start:
                continue
            for record in iter_records(segment.read(batch.position, batch.size)):
                if record.timestamp >= timestamp and record.offset >= log_start:
                    return record.offset, record.timestamp
    return None


def max_timestamp(segments: list[Segment], log_start: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the record with the largest timestamp (the first such)."""
    live = _live(segments, log_start)
    if not live:
        return None
    best = max(live, key=lambda s: s.max_timestamp)  # the first segment holding the maximum
    target = best.max_timestamp
    found: BatchInfo | None = None
    for batch in best.batches_from(best.time_start_position(target)):
        if batch.max_timestamp == target and batch.last_offset >= log_start:
            found = batch
            break
    if found is None:
        return None
    for record in iter_records(best.read(found.position, found.size)):
        if record.timestamp == target and record.offset >= log_start:
            return record.offset, record.timestamp
    return found.last_offset, target
