"""Bringing a share partition into memory and describing it: the start offset from
`share.auto.offset.reset` (SharePartition.startOffsetDuringInitialization), the window rebuilt from the
durable state (SharePartition.maybeInitialize), the start offset following the log start
(SharePartition.updateCacheAndOffsets), and the views describe answers with.
"""

from __future__ import annotations

import re
from uuid import UUID

from kcoord.coordinator.share_partitions.durable import DurableState
from kcoord.coordinator.share_partitions.model import (
    InFlightRange,
    LogBounds,
    RecordState,
    SharePartitionView,
)
from kcoord.coordinator.share_partitions.window import InFlightBatch, InFlightState, ShareWindow, is_terminal

__all__ = ["auto_reset_offset", "delivery_complete_count", "durable_view", "follow_log_start", "live_view",
           "parse_duration_ms", "window_from"]  # fmt: skip

_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d{1,9})?)S)?)?", re.IGNORECASE
)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse for what ShareGroupAutoOffsetResetStrategy accepts (PnDTnHnMn.nS, not
    negative), in milliseconds. ValueError when it is not one."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    days, hours, minutes = (int(match.group(g) or 0) for g in "dhm")
    seconds = float(match.group("s") or 0)
    return ((days * 24 + hours) * 60 + minutes) * 60_000 + round(seconds * 1000)


def auto_reset_offset(strategy: str, bounds: LogBounds, now_ms: int) -> int:
    """Where a share partition without durable state starts: latest = the high watermark, earliest = the
    log start, by_duration:<d> = the first offset with a timestamp at or after now - d (the high
    watermark when there is none, as ListOffsets answers for a timestamp past every record)."""
    lowered = strategy.strip().lower()
    if lowered == "earliest":
        return bounds.log_start
    if lowered.startswith("by_duration:"):
        since = now_ms - parse_duration_ms(strategy.strip()[len("by_duration:") :])
        found = bounds.offset_for_timestamp(since)
        return bounds.high_watermark if found is None else max(found, bounds.log_start)
    return bounds.high_watermark


def window_from(durable: DurableState) -> ShareWindow:
    """SharePartition.maybeInitialize over the durable state: its batches back in the window, and the
    offsets between them that no record mentions (fetched, never settled) AVAILABLE for another delivery
    (Kafka's persister read gap window); then the start offset moves past the leading settled records."""
    start = durable.start_offset
    window = ShareWindow(start, start)
    expected = start
    for batch in durable.batches:
        if batch.first_offset > expected:
            gap = InFlightState(RecordState.AVAILABLE, 0)
            window.put(InFlightBatch(expected, batch.first_offset - 1, gap, gap=True))
        state = InFlightState(RecordState(batch.delivery_state), batch.delivery_count)
        window.put(InFlightBatch(batch.first_offset, batch.last_offset, state))
        expected = batch.last_offset + 1
    if window.keys:
        window.end_offset = expected - 1
        window.find_next_fetch_offset = True
        window.advance_start()
    return window


def follow_log_start(window: ShareWindow, log_start: int) -> bool:
    """SharePartition.updateCacheAndOffsets: the log start moved past the start offset (retention,
    DeleteRecords): AVAILABLE records below it are ARCHIVED and the start offset follows. Written with
    the next write, as Kafka does. True when something changed."""
    if log_start <= window.start_offset:
        return False
    if not window.keys:
        window.start_offset = window.end_offset = log_start
        return True
    for batch, first, last, state in list(window.states_from(window.start_offset, log_start - 1)):
        if state.state is not RecordState.AVAILABLE:
            continue
        if last >= log_start:
            offsets = batch.split()
            for offset in range(first, log_start):
                if offsets[offset].state is RecordState.AVAILABLE:
                    offsets[offset].archive()
        else:
            state.archive()
    window.start_offset = log_start
    window.end_offset = max(window.end_offset, log_start)
    window.find_next_fetch_offset = True
    return True


def _ranges(window: ShareWindow) -> list[InFlightRange]:
    out: list[InFlightRange] = []
    for key in window.keys:
        for first, last, s in window.batches[key].states():
            if last < window.start_offset:
                continue
            first = max(first, window.start_offset)
            held = s.state is RecordState.ACQUIRED
            member, deadline = (s.member_id, s.lock_deadline_ms) if held else (None, None)
            out.append(InFlightRange(first, last, s.state, s.delivery_count, member, deadline))
    return out


def delivery_complete_count(window: ShareWindow) -> int:
    """KIP-1226's DeliveryCompleteCount: records at or past the start offset already ACKNOWLEDGED or
    ARCHIVED. Counted over the states, without the views `_ranges` builds: every acknowledgement's
    write asks for it."""
    start, count = window.start_offset, 0
    for batch in window.batches.values():
        if batch.last_offset < start:
            continue
        for first, last, state in batch.states():
            if last >= start and is_terminal(state.state):
                count += last - max(first, start) + 1
    return count


def live_view(key: tuple[str, UUID, int], window: ShareWindow, state_epoch: int) -> SharePartitionView:
    end = window.end_offset if window.is_stale() else window.end_offset + 1
    return SharePartitionView(*key, window.start_offset, end, state_epoch, tuple(_ranges(window)))


def durable_view(key: tuple[str, UUID, int], durable: DurableState) -> SharePartitionView:
    """A share partition not in memory, as loading it would make it: the start offset past the leading
    settled records (Kafka writes the start offset before it moves, so its persisted one lags)."""
    return live_view(key, window_from(durable), durable.state_epoch)
