"""The edge's pure parts of ShareFetch: the share session cache (ShareSessionCache, newContext,
acknowledgeSessionUpdate) and what read_committed skips in the batches of a read."""

from __future__ import annotations

import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.broker.share.batches import parse_batches
from kcoord.broker.share.sessions import ShareContext, ShareSessionCache, next_epoch
from kcoord.coordinator.share_partitions import AcquiredRange
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import end_txn_marker_batch

T1, T2 = uuid.uuid4(), uuid.uuid4()


def test_the_cache_is_bounded_and_a_reopened_session_does_not_count_twice() -> None:
    """ShareSessionCache.maybeCreateSession: SHARE_SESSION_LIMIT_REACHED past max.share.sessions."""
    cache = ShareSessionCache(max_sessions=2)
    assert isinstance(cache.new_context("g", "a", 0, [(T1, 0)], [], False), ShareContext)
    assert isinstance(cache.new_context("g", "b", 0, [(T1, 0)], [], False), ShareContext)
    assert cache.new_context("g", "c", 0, [(T1, 0)], [], False) == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert isinstance(cache.new_context("g", "a", 0, [(T1, 0)], [], False), ShareContext)  # replaces a's
    cache.remove("g", "b")
    assert isinstance(cache.new_context("g", "c", 0, [(T1, 0)], [], False), ShareContext)
    cache.remove_group("g")
    assert len(cache) == 0


def test_partitions_are_added_and_forgotten_and_epochs_follow() -> None:
    cache = ShareSessionCache()
    opened = cache.new_context("g", "m", 0, [(T1, 0), (T1, 1)], [], False)
    assert isinstance(opened, ShareContext) and opened.full and opened.session.epoch == 1
    later = cache.new_context("g", "m", 1, [(T2, 0)], [(T1, 0)], True)
    assert isinstance(later, ShareContext) and not later.full
    assert list(later.session.partitions) == [(T1, 1), (T2, 0)] and later.session.epoch == 2
    assert cache.acknowledge_update("g", "m", 2) is later.session and later.session.epoch == 3
    assert cache.acknowledge_update("g", "m", 2) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    final = cache.new_context("g", "m", -1, [], [], True)
    assert isinstance(final, ShareContext) and final.final
    assert next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1  # ShareRequestMetadata.nextEpoch


def _batch(base: int, count: int, producer_id: int = -1, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, producer_id, 0 if producer_id >= 0 else -1,
                                        0 if producer_id >= 0 else -1, batch_size=1 << 30)  # fmt: skip
    for i in range(count):
        builder.append(i, 1_700_000_000_000 + i, None, b"v", [])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")  # the base offset as the log assigned it (outside the CRC)
    return bytes(data)


def test_read_committed_skips_aborted_batches_and_markers_only() -> None:
    """Producer 7 aborts (offsets 0-1, marker 4), producer 8 commits (2-3, marker 5) around them."""
    records = b"".join([
        _batch(0, 2, producer_id=7, transactional=True),
        _batch(2, 2, producer_id=8, transactional=True),
        _marker(4, producer_id=7, commit=False),
        _marker(5, producer_id=8, commit=True),
        _batch(6, 1),
    ])  # fmt: skip
    batches = parse_batches(records)
    assert batches.ranges == [(0, 1), (2, 3), (4, 4), (5, 5), (6, 6)]
    skip = batches.skip([(7, 0)])
    assert [offset for offset in range(7) if skip(offset)] == [0, 1, 4, 5]
    # the bytes sent back: from the batch of the first acquired offset to that of the last
    sliced = batches.slice([AcquiredRange(2, 3, 1), AcquiredRange(6, 6, 1)])
    assert parse_batches(sliced).ranges == [(2, 3), (4, 4), (5, 5), (6, 6)]
    assert batches.slice([]) == b""


def _marker(offset: int, producer_id: int, commit: bool) -> bytes:
    data = bytearray(end_txn_marker_batch(producer_id, 0, commit, 0, 1_700_000_000_000))
    data[0:8] = offset.to_bytes(8, "big")
    return bytes(data)
