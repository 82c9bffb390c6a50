"""Acquisition: which fetched records a member gets, and their acquisition locks (SharePartition.acquire,
lastOffsetAndMaxRecordsToAcquire, acquireNewBatchRecords, createBatches, acquireSubsetBatchRecords,
maybeArchiveStaleBatches, filterAbortedTransactionalAcquiredRecords). Nothing here is persisted: Kafka
writes acquired records only when they are acknowledged, released or their lock expires.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kcoord.coordinator.share_partitions.model import AcquiredRange, RecordState, StateBatch
from kcoord.coordinator.share_partitions.window import (
    DeliveryCountOps,
    InFlightBatch,
    InFlightState,
    ShareWindow,
)

__all__ = ["AcquireRequest", "acquire", "archive_skipped", "read_horizon"]

_AVAILABLE, _ACQUIRED = RecordState.AVAILABLE, RecordState.ACQUIRED


@dataclass(frozen=True, slots=True)
class AcquireRequest:
    """One acquisition for one member: the log batches read from the next fetch offset, the limits."""

    member_id: str
    batches: Sequence[tuple[int, int]]
    max_records: int
    batch_size: int
    strict: bool
    """ShareFetch v2 record_limit mode: never more than max_records, batches split per offset."""
    max_delivery_count: int
    max_record_locks: int
    lock_deadline_ms: int


def _limits(window: ShareWindow, fetch_offset: int, req: AcquireRequest) -> tuple[int, int]:
    """SharePartition.lastOffsetAndMaxRecordsToAcquire: (last offset, max records) that keep the window
    within `max_record_locks`, or that re-acquire only inside it when it is full."""
    last = req.batches[-1][1]
    max_records = min(req.max_records, req.max_record_locks - window.in_flight_count())
    if max_records <= 0 and fetch_offset <= window.end_offset:
        max_records = min(req.max_records, window.end_offset - fetch_offset + 1)
        last = min(last, window.end_offset)
    return last, max_records


def read_horizon(window: ShareWindow, first_fetched: int, max_records: int) -> int:
    """The last offset `acquire` can reach for a read whose first batch starts at `first_fetched`: its
    cached batches end at the window's end, and new records start at most at the later of the first
    fetched offset and the window's end + 1, `max_records` of them rounded up to a log batch's end
    (acquireNewBatchRecords: lastOffsetFromBatchWithRequestOffset). A read up to the first batch
    reaching it hands `acquire` all it can take: Kafka's log read is a zero-copy slice of up to `max_bytes`,
    ours copies, so reading on to `max_bytes` (librdkafka asks for 50 MiB) costs per record of the
    whole log left, not of the records acquired."""
    return max(first_fetched, window.end_offset + 1) + max_records - 1


def acquire(window: ShareWindow, req: AcquireRequest) -> list[AcquiredRange]:
    """Acquire for `req.member_id` the AVAILABLE records among `req.batches`; ranges ascending."""
    if req.max_records <= 0 or not req.batches or req.batches[-1][1] < window.start_offset:
        return []  # Kafka 4.3.1's acquire: nothing fetched at or past the start offset
    fetch_offset = window.next_fetch_offset()
    last, max_records = _limits(window, fetch_offset, req)
    if max_records <= 0:
        return []
    first_fetched = req.batches[0][0]
    _archive_stale(window, fetch_offset, first_fetched)
    base = first_fetched
    floor = window.floor(base)
    if floor is None:
        base = max(base, window.start_offset)
    elif floor.last_offset >= base:
        base = floor.first_offset
    # Kafka 4.3.1 looks for cached batches from the first fetched batch even when the start offset is
    # past it (subMap(min(firstBatch.baseOffset(), baseOffset), ...)): after a restart a batch split
    # around the start offset is keyed below it. New records start at the adjusted base, never below
    # the start offset (acquireNewBatchRecords(..., baseOffset, ...)).
    cached = window.between(min(first_fetched, base), last)
    if not cached:
        return _acquire_new(window, req, base, last, max_records)[0]
    return _acquire_over(window, req, cached, last, max_records)


def _acquire_over(
    window: ShareWindow, req: AcquireRequest, cached: list[InFlightBatch], last: int, max_records: int
) -> list[AcquiredRange]:
    """The fetch overlaps the window: its batches first, then records past them (SharePartition.acquire's
    loop over the sub-map)."""
    first_fetched = req.batches[0][0]
    result: list[AcquiredRange] = []
    count = 0
    for batch in cached:
        if count >= max_records:
            break
        if batch.gap and batch.offsets is None:
            count += _acquire_gap(window, req, batch, first_fetched, last, max_records - count, result)
            continue
        throttled = _should_throttle(batch, first_fetched, last, throttle_limit(req.max_delivery_count))
        if throttled and count > 0:  # the much-redelivered records go out on their own, next time
            return result
        got = _acquire_cached(batch, req, first_fetched, last, max_records - count, result, throttled)
        count += got
        if throttled and got > 0:
            return result
    if count < max_records and cached[-1].last_offset < last:
        more, _ = _acquire_new(window, req, cached[-1].last_offset + 1, last, max_records - count)
        result.extend(more)
    return result


def throttle_limit(max_delivery_count: int) -> int:
    """SharePartition.throttleRecordsDeliveryLimit: from half the delivery count limit on, records are
    handed out in ever smaller groups."""
    return max(2, -(-max_delivery_count // 2))


def _should_throttle(batch: InFlightBatch, first: int, last: int, limit: int) -> bool:
    """SharePartition.shouldThrottleRecordsDelivery: an acquirable record of the batch was delivered
    `limit` times already."""
    if batch.offsets is None:
        assert batch.batch is not None
        return batch.batch.delivery_count >= limit
    counts = [
        s.delivery_count for o, s in batch.offsets.items() if first <= o <= last and s.state is _AVAILABLE
    ]
    return max(counts, default=0) >= limit


def _acquire_cached(
    batch: InFlightBatch,
    req: AcquireRequest,
    first: int,
    last: int,
    remaining: int,
    out: list[AcquiredRange],
    throttled: bool = False,
) -> int:
    """Re-acquire a batch already in the window: whole when it is a full match, else per offset."""
    size = batch.last_offset - batch.first_offset + 1
    full = batch.first_offset >= first and batch.last_offset <= last
    if not full or batch.offsets is not None or (req.strict and size > remaining) or throttled:
        whole = batch.batch
        if whole is not None and (whole.state is not _AVAILABLE or whole.rollback is not None):
            return 0
        batch.split()
        return _acquire_offsets(batch, req, first, last, remaining, out)
    whole = batch.batch
    assert whole is not None
    if whole.state is not _AVAILABLE or whole.rollback is not None:
        return 0
    if not whole.try_update(_ACQUIRED, DeliveryCountOps.INCREASE, req.max_delivery_count, req.member_id):
        return 0
    whole.lock_deadline_ms = req.lock_deadline_ms
    out.append(AcquiredRange(batch.first_offset, batch.last_offset, whole.delivery_count))
    return size


def _acquire_offsets(
    batch: InFlightBatch, req: AcquireRequest, first: int, last: int, remaining: int, out: list[AcquiredRange]
) -> int:
    """SharePartition.acquireSubsetBatchRecords: one range per offset, as Kafka answers. A record on its
    last delivery attempt is delivered alone, and past the throttle limit the batch's records go out
    in groups halved per further delivery (so a poison record does not take others down with it)."""
    offsets = batch.split()
    limit = req.max_delivery_count
    acquired = 0
    group = -1  # the group size once a throttled record was met (maxFetchRecordsWhileThrottledRecords)
    for offset, state in offsets.items():
        if offset > last:
            break
        if offset < first or state.state is not _AVAILABLE or state.rollback is not None:
            continue
        count = state.delivery_count
        if limit > 2 and count == limit - 1 and acquired > 0:
            break
        if count >= throttle_limit(limit) and group < 0:
            group = max(1, len(offsets) >> (count - throttle_limit(limit) + 1))
        if not state.try_update(_ACQUIRED, DeliveryCountOps.INCREASE, limit, req.member_id):
            continue
        state.lock_deadline_ms = req.lock_deadline_ms
        out.append(AcquiredRange(offset, offset, state.delivery_count))
        acquired += 1
        if (state.delivery_count == limit and limit > 2) or (req.strict and acquired == remaining):
            break
        if acquired == group:
            break
    return acquired


def _last_of_batch_containing(batches: Sequence[tuple[int, int]], offset: int) -> int:
    """SharePartition.lastOffsetFromBatchWithRequestOffset: acquisition ends on a log batch's end."""
    found: tuple[int, int] | None = None
    for batch in batches:
        if offset < batch[0]:
            break
        found = batch
    return found[1] if found is not None and offset <= found[1] else offset


def _acquire_gap(
    window: ShareWindow,
    req: AcquireRequest,
    gap: InFlightBatch,
    first: int,
    last: int,
    remaining: int,
    out: list[AcquiredRange],
) -> int:
    """A gap of the durable state is acquired as new records are: SharePartition.acquire, while the
    persister read gap window is active, hands the offsets between cached batches to
    acquireNewBatchRecords, so at most `remaining` records rounded up to a log batch's end, yet never
    past the gap. What is left of the gap stays a gap, for the next fetch."""
    low, high = max(gap.first_offset, first), min(gap.last_offset, last)
    if high < low or gap.batch is None or gap.batch.state is not _AVAILABLE:
        return 0
    if remaining < high - low + 1:
        high = min(high, _last_of_batch_containing(req.batches, low + remaining - 1))
    if low > gap.first_offset:
        window.put(InFlightBatch(gap.first_offset, low - 1, InFlightState(_AVAILABLE, 0), gap=True))
    if high < gap.last_offset:
        window.put(InFlightBatch(high + 1, gap.last_offset, InFlightState(_AVAILABLE, 0), gap=True))
    if req.strict and high - low + 1 > remaining:
        out.append(_put_strict(window, req, low, high, remaining))
        return remaining
    ranges = _split_by_batch_size(req, low, high)
    for r in ranges:
        state = InFlightState(_ACQUIRED, 1, req.member_id, req.lock_deadline_ms)
        window.put(InFlightBatch(r.first_offset, r.last_offset, state))
    out.extend(ranges)
    return high - low + 1


def _acquire_new(
    window: ShareWindow, req: AcquireRequest, first: int, last: int, max_records: int
) -> tuple[list[AcquiredRange], int]:
    """SharePartition.acquireNewBatchRecords + createBatches: records never in the window before."""
    if not window.keys and window.end_offset > first:
        first = window.end_offset
    if max_records < last - first + 1:
        last = _last_of_batch_containing(req.batches, first + max_records - 1)
    if last < first:
        return [], 0
    if req.strict and last - first + 1 > max_records:
        ranges = [_put_strict(window, req, first, last, max_records)]
        count = max_records
    else:
        ranges = _split_by_batch_size(req, first, last)
        for r in ranges:
            state = InFlightState(_ACQUIRED, 1, req.member_id, req.lock_deadline_ms)
            window.put(InFlightBatch(r.first_offset, r.last_offset, state))
        count = last - first + 1
    if window.keys[0] == first:
        window.start_offset = first
    window.end_offset = max(window.end_offset, last)
    return ranges, count


def _split_by_batch_size(req: AcquireRequest, first: int, last: int) -> list[AcquiredRange]:
    """createBatches: cut at log batch boundaries once `batch_size` records are gathered."""
    ranges: list[AcquiredRange] = []
    current = first
    if not req.strict and last - first + 1 > req.batch_size:
        for base, _ in req.batches:
            if base > last:
                break
            if base - current >= req.batch_size:
                ranges.append(AcquiredRange(current, base - 1, 1))
                current = base
    ranges.append(AcquiredRange(current, last, 1))
    return ranges


def _put_strict(
    window: ShareWindow, req: AcquireRequest, first: int, last: int, max_records: int
) -> AcquiredRange:
    """record_limit mode: the whole fetched range enters the window, only `max_records` of it acquired
    (InFlightBatch.maybeInitializeOffsetStateUpdate(lastOffset, delayMs))."""
    batch = InFlightBatch(first, last, InFlightState(_AVAILABLE, 0))
    offsets = batch.split()
    for offset in range(first, first + max_records):
        offsets[offset] = InFlightState(_ACQUIRED, 1, req.member_id, req.lock_deadline_ms)
    window.put(batch)
    window.find_next_fetch_offset = True
    return AcquiredRange(first, first + max_records - 1, 1)


def _archive_stale(window: ShareWindow, fetch_offset: int, first_fetched: int) -> None:
    """SharePartition.maybeArchiveStaleBatches: AVAILABLE records between the fetch offset and the first
    fetched batch are gone from the log (compaction): ARCHIVED, so the start offset can pass them."""
    if not window.keys or fetch_offset >= first_fetched:
        return
    archived = False
    for batch, lo, hi, state in list(window.states_from(fetch_offset, first_fetched - 1)):
        if state.state is not _AVAILABLE:
            continue
        if batch.offsets is None and (lo < fetch_offset or hi >= first_fetched):
            batch.split()
            archived = _archive_offsets(batch, fetch_offset, first_fetched - 1) or archived
            continue
        state.archive()
        archived = True
    if archived:
        window.find_next_fetch_offset = True


def _archive_offsets(batch: InFlightBatch, low: int, high: int) -> bool:
    assert batch.offsets is not None
    done = False
    for offset, state in batch.offsets.items():
        if low <= offset <= high and state.state is _AVAILABLE:
            state.archive()
            done = True
    return done


def archive_skipped(
    window: ShareWindow, acquired: list[AcquiredRange], skip: Callable[[int], bool]
) -> tuple[list[AcquiredRange], list[StateBatch]]:
    """read_committed: acquired records of aborted transactions (and control markers) are ARCHIVED at
    once and left out of the answer (filterAbortedTransactionalAcquiredRecords). Returns the ranges
    left and the archived records' state batches."""
    kept: list[AcquiredRange] = []
    archived: list[StateBatch] = []
    for r in acquired:
        run_start: int | None = None
        for offset in range(r.first_offset, r.last_offset + 2):
            keep = offset <= r.last_offset and not skip(offset)
            if keep and run_start is None:
                run_start = offset
            elif not keep and run_start is not None:
                kept.append(AcquiredRange(run_start, offset - 1, r.delivery_count))
                run_start = None
            if offset <= r.last_offset and not keep:
                archived.append(_archive_one(window, offset))
    return kept, archived


def _archive_one(window: ShareWindow, offset: int) -> StateBatch:
    batch = window.floor(offset)
    assert batch is not None and batch.last_offset >= offset
    state = batch.split()[offset]
    state.archive()
    return StateBatch(offset, offset, RecordState.ARCHIVED, state.delivery_count)
