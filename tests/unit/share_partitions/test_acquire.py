"""Initialisation and acquisition (SharePartition.maybeInitialize, nextFetchOffset, acquire)."""

from __future__ import annotations

import dataclasses

from kcoord.coordinator.share_partitions import AcquiredRange, RecordState
from kcoord.protocol.errors import ErrorCode
from tests.unit.share_partitions.conftest import GROUP, LOCK_MS, SETTINGS, TOPIC, Share, bounds, make_share

ACQ, AV, ARC = RecordState.ACQUIRED, RecordState.AVAILABLE, RecordState.ARCHIVED


def with_reset(strategy: str) -> Share:
    return make_share(settings=dataclasses.replace(SETTINGS, auto_offset_reset=strategy))


def test_latest_starts_at_the_high_watermark() -> None:
    share = with_reset("latest")
    assert share.next_offset(bounds(log_start=10, high_watermark=40)) == 40
    assert share.start == 40


def test_earliest_starts_at_the_log_start() -> None:
    share = with_reset("earliest")
    assert share.next_offset(bounds(log_start=10, high_watermark=40)) == 10


def test_by_duration_starts_at_the_first_record_at_or_after_now_minus_the_duration() -> None:
    share = with_reset("by_duration:PT1H")
    now = share.clock.now_ms()
    times = {o: now - 7_200_000 + o * 60_000 for o in range(100)}  # one record a minute, from two hours ago
    assert share.next_offset(bounds(times=times)) == 60


def test_by_duration_past_every_record_starts_at_the_high_watermark() -> None:
    share = with_reset("by_duration:P1DT0.5S")
    assert share.next_offset(bounds(high_watermark=77, times={0: 1})) == 77  # no record that young


def test_a_fetch_acquires_whole_batches_with_delivery_count_one_and_a_lock(share: Share) -> None:
    assert share.fetch("m1", max_records=7) == [AcquiredRange(0, 9, 1)]  # 7 records end inside batch 5-9
    states = share.states()
    assert set(states.values()) == {(ACQ, 1, "m1")}
    view = share.tenant.describe(GROUP, TOPIC, 0)
    assert view is not None and {r.lock_deadline_ms for r in view.records} == {share.clock.now_ms() + LOCK_MS}
    assert share.next_offset() == 10
    assert share.records() == []  # acquisition writes nothing


def test_batch_size_splits_the_acquired_records_at_batch_boundaries(share: Share) -> None:
    assert share.fetch("m1", max_records=20, batch_size=8) == [
        AcquiredRange(0, 9, 1),
        AcquiredRange(10, 19, 1),
    ]


def test_record_limit_mode_acquires_exactly_max_records(share: Share) -> None:
    assert share.fetch("m1", max_records=3, strict=True) == [AcquiredRange(0, 2, 1)]
    states = share.states()
    assert [states[o][0] for o in range(5)] == [ACQ, ACQ, ACQ, AV, AV]
    assert share.next_offset() == 3
    assert share.fetch("m2", max_records=3, strict=True) == [
        AcquiredRange(3, 3, 1),
        AcquiredRange(4, 4, 1),
        AcquiredRange(5, 5, 1),
    ]


def test_a_second_member_gets_the_next_records(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.fetch("m2", max_records=5) == [AcquiredRange(5, 9, 1)]
    assert share.states()[7] == (ACQ, 1, "m2")


def test_the_window_is_capped_by_partition_max_record_locks() -> None:
    share = make_share(settings=dataclasses.replace(SETTINGS, partition_max_record_locks=12))
    # 12 records end inside batch 10-14: the whole batch is acquired (Kafka's limit is soft)
    assert share.fetch("m1", max_records=100) == [AcquiredRange(0, 14, 1)]
    assert share.next_offset() is None  # full: nothing may be acquired
    assert share.fetch("m2") is None
    assert share.ack("m1", (0, 4, [2])) is ErrorCode.NONE  # released: acquirable again inside the window
    assert share.next_offset() == 0
    # part of the 0-14 batch was released: it is tracked per offset, one range per offset (as Kafka)
    assert share.fetch("m2", max_records=100) == [AcquiredRange(o, o, 2) for o in range(5)]


def test_skipped_offsets_are_archived_not_acquired_and_written(share: Share) -> None:
    aborted = {2, 3}
    acquired = share.fetch("m1", max_records=5, skip=aborted.__contains__)
    assert acquired == [AcquiredRange(0, 1, 1), AcquiredRange(4, 4, 1)]
    states = share.states()
    assert states[2][0] is ARC and states[3][0] is ARC
    assert len(share.records()) == 1  # the archived records are written at once (docs/compat.md)


def test_the_start_offset_follows_the_log_start(share: Share) -> None:
    share.fetch("m1", max_records=10)
    share.ack("m1", (0, 9, [2]))
    assert share.next_offset(bounds(log_start=7)) == 7
    assert share.start == 7
    assert all(state[0] is not AV or o >= 7 for o, state in share.states().items())


def test_an_acquire_without_next_fetch_offset_first_acquires_nothing(share: Share) -> None:
    assert share.tenant.acquire(GROUP, "m1", TOPIC, 3, SETTINGS, [(0, 4)], 10, 10, False) == []
