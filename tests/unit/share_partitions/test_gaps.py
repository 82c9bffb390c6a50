"""A gap of the durable state after a restart (offsets fetched, never written: Kafka's persister read
gap window, SharePartition.maybeInitialize) is acquired as new records are (SharePartition.acquire ->
acquireNewBatchRecords): at most max_records rounded up to a log batch's end, never past the gap; what is
left of it stays a gap. The wire test is tests/server/test_share_fetch_gaps.py."""

from __future__ import annotations

from kcoord.coordinator.share_partitions import AcquiredRange, RecordState
from tests.unit.share_partitions.conftest import GROUP, TOPIC, Share, log_batches, make_share

ACCEPT = 1
AV, ACK = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED


def restarted_with_a_gap() -> Share:
    """Log batches of 5; 0-29 acquired, 0-9 and 20-29 accepted: 10-19 never written."""
    before = make_share(batches=log_batches(30))
    assert before.fetch("a") == [AcquiredRange(0, 29, 1)]
    assert before.ack("a", (0, 9, [ACCEPT]), (20, 29, [ACCEPT])) == 0
    after = make_share(batches=log_batches(30))
    for record in before.records():
        after.tenant.apply(record)
    return after


def test_the_gap_is_acquired_up_to_max_records_on_a_log_batch_end() -> None:
    share = restarted_with_a_gap()
    assert share.fetch("b", max_records=3) == [AcquiredRange(10, 14, 1)]
    states = share.states()
    assert [states[o][0] for o in (15, 19, 20)] == [AV, AV, ACK]  # the rest of the gap waits
    assert share.fetch("b", max_records=3) == [AcquiredRange(15, 19, 1)]
    assert share.fetch("b", max_records=3) == []


def test_max_records_past_the_gap_stops_at_its_end() -> None:
    share = restarted_with_a_gap()
    assert share.fetch("b", max_records=500) == [AcquiredRange(10, 19, 1)]


def test_record_limit_mode_acquires_exactly_max_records_of_the_gap() -> None:
    share = restarted_with_a_gap()
    assert share.fetch("c", max_records=3, strict=True) == [AcquiredRange(10, 12, 1)]
    view = share.tenant.describe(GROUP, TOPIC, 0)
    assert view is not None and view.start_offset == 10
    assert share.fetch("c", max_records=3, strict=True) == [
        AcquiredRange(13, 13, 1), AcquiredRange(14, 14, 1), AcquiredRange(15, 15, 1),
    ]  # fmt: skip
