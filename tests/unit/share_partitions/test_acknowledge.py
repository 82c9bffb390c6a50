"""Acknowledgement, release, lock expiry and the start offset (SharePartition.acknowledge,
releaseAcquiredRecords, releaseAcquisitionLockOnTimeout, maybeUpdateCachedStateAndOffsets)."""

from __future__ import annotations

import dataclasses

from kcoord.coordinator.share_partitions import AcquiredRange, RecordState, ShareSnapshot, ShareUpdate
from kcoord.protocol.errors import ErrorCode
from tests.unit.share_partitions.conftest import GROUP, LOCK_MS, SETTINGS, TOPIC, Share, make_share

ACQ, AV, ACK, ARC = (
    RecordState.ACQUIRED,
    RecordState.AVAILABLE,
    RecordState.ACKNOWLEDGED,
    RecordState.ARCHIVED,
)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
NONE = ErrorCode.NONE


def test_accept_acknowledges_durably_and_moves_the_start_offset(share: Share) -> None:
    share.fetch("m1", max_records=10)
    assert share.ack("m1", (0, 4, [ACCEPT])) is NONE
    assert share.start == 5
    assert isinstance(share.records()[0], ShareSnapshot)
    assert share.tenant.durable(GROUP, TOPIC, 0) is not None


def test_the_answer_waits_until_the_state_is_durable(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.log.hold = True
    assert share.ack("m1", (0, 4, [ACCEPT])) is None
    assert share.start == 0  # in transition: the start offset waits for the write
    assert share.ack("m1", (0, 4, [REJECT])) is ErrorCode.INVALID_RECORD_STATE  # being written
    answers: list[ErrorCode] = []
    share.log.hold = False
    share.tenant.acknowledge(GROUP, "m1", TOPIC, 0, [], SETTINGS, answers.append)
    share.log.release()
    assert share.start == 5


def test_a_failed_write_rolls_the_records_back_to_acquired(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.log.fail_with = OSError("disk")
    assert share.ack("m1", (0, 4, [ACCEPT])) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert set(share.states().values()) == {(ACQ, 1, "m1")}
    share.log.fail_with = None
    assert share.ack("m1", (0, 4, [ACCEPT])) is NONE


def test_a_failed_write_after_the_lock_expired_makes_the_records_available(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.log.hold = True
    share.ack("m1", (0, 4, [ACCEPT]))
    share.clock.advance(LOCK_MS + 1)  # the lock is due, the timer has not run yet
    share.log.release(OSError("disk"))
    assert set(share.states().values()) == {(AV, 1, None)}


def test_reject_and_gap_archive(share: Share) -> None:
    share.fetch("m1", max_records=10)
    assert share.ack("m1", (0, 4, [REJECT]), (5, 9, [GAP])) is NONE
    assert share.start == 10


def test_release_makes_records_available_for_redelivery(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m1", (0, 4, [RELEASE])) is NONE
    assert share.changes == [(GROUP, TOPIC, 0)]
    assert share.next_offset() == 0
    assert share.fetch("m2", max_records=5) == [AcquiredRange(0, 4, 2)]


def test_release_at_the_delivery_count_limit_archives() -> None:
    share = make_share(settings=dataclasses.replace(SETTINGS, delivery_count_limit=2))
    share.fetch("m1", max_records=5)
    share.ack("m1", (0, 4, [RELEASE]))
    assert share.fetch("m1", max_records=5) == [AcquiredRange(0, 4, 2)]
    share.ack("m1", (0, 4, [RELEASE]))
    assert share.start == 5  # archived, so the start offset passes them


def test_per_offset_acknowledgement_splits_the_batch(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m1", (0, 4, [ACCEPT, RELEASE, REJECT, ACCEPT, RENEW])) is NONE
    states = share.states()
    assert [states[o][0] for o in range(1, 5)] == [AV, ARC, ACK, ACQ]
    assert share.start == 1
    # the released offset again, then new records up to max_records (ending on a batch's end)
    assert share.fetch("m2", max_records=5) == [AcquiredRange(1, 1, 2), AcquiredRange(5, 9, 1)]


def test_a_partial_batch_acknowledgement_tracks_offsets(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m1", (0, 1, [ACCEPT])) is NONE
    assert share.start == 2
    assert share.states()[2] == (ACQ, 1, "m1")


def test_another_members_records_cannot_be_acknowledged(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m2", (0, 4, [ACCEPT])) is ErrorCode.INVALID_RECORD_STATE


def test_available_records_cannot_be_acknowledged(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.ack("m1", (0, 4, [RELEASE]))
    assert share.ack("m1", (0, 4, [ACCEPT])) is ErrorCode.INVALID_RECORD_STATE


def test_offsets_past_what_was_fetched_are_an_invalid_request(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m1", (3, 8, [ACCEPT])) is ErrorCode.INVALID_REQUEST


def test_malformed_acknowledge_types_are_an_invalid_request(share: Share) -> None:
    share.fetch("m1", max_records=5)
    assert share.ack("m1", (0, 4, [ACCEPT, ACCEPT])) is ErrorCode.INVALID_REQUEST
    assert share.ack("m1", (0, 4, [9])) is ErrorCode.INVALID_REQUEST


def test_an_error_in_a_later_batch_undoes_the_earlier_ones(share: Share) -> None:
    share.fetch("m1", max_records=10)
    assert share.ack("m1", (0, 4, [ACCEPT]), (5, 9, [7])) is ErrorCode.INVALID_REQUEST
    assert set(share.states().values()) == {(ACQ, 1, "m1")}
    assert share.records() == []


def test_the_acquisition_lock_expires_into_available(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.timers.advance(LOCK_MS)
    assert set(share.states().values()) == {(AV, 1, None)}
    assert share.changes and len(share.records()) == 1
    assert share.fetch("m2", max_records=5) == [AcquiredRange(0, 4, 2)]


def test_lock_expiry_at_the_delivery_count_limit_archives() -> None:
    share = make_share(settings=dataclasses.replace(SETTINGS, delivery_count_limit=2))
    for _ in range(2):
        share.fetch("m1", max_records=5)
        share.timers.advance(LOCK_MS)
    assert share.start == 5
    moved = share.tenant.counts.counts  # the metrics' counts: two expiries of five, the last archived
    assert (moved["acquired"], moved["lock_expired"], moved["archived"]) == (10, 10, 5)


def test_renew_restarts_the_lock(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.timers.advance(LOCK_MS - 1)
    assert share.ack("m1", (0, 4, [RENEW])) is NONE
    share.timers.advance(LOCK_MS - 1)
    assert set(share.states().values()) == {(ACQ, 1, "m1")}
    assert share.records() == []  # a renewal writes nothing
    share.timers.advance(1)
    assert set(share.states().values()) == {(AV, 1, None)}


def test_a_leaving_member_releases_its_records_keeping_their_delivery_count(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.fetch("m2", max_records=5)
    share.tenant.release_member(GROUP, "m1")
    states = share.states()
    assert {states[o] for o in range(5)} == {(AV, 1, None)}  # as Kafka 4.3.1 (tests/share)
    assert {states[o] for o in range(5, 10)} == {(ACQ, 1, "m2")}
    assert share.next_offset() == 0


def test_expire_locks_now_releases_every_lock_of_the_group(share: Share) -> None:
    share.fetch("m1", max_records=10)
    assert share.tenant.expire_locks_now("other") == 0
    assert share.tenant.expire_locks_now(GROUP) == 10
    assert set(share.states().values()) == {(AV, 1, None)}


def test_updates_follow_the_first_snapshot_and_a_snapshot_every_n_updates() -> None:
    share = make_share(snapshot_every=2)
    for first in range(0, 25, 5):
        share.fetch("m1", max_records=5)
        assert share.ack("m1", (first, first + 4, [ACCEPT])) is NONE
    kinds = [type(r) for r in share.records()]
    assert kinds == [ShareSnapshot, ShareUpdate, ShareUpdate, ShareSnapshot, ShareUpdate]


def test_reset_starts_again_at_the_offset_with_a_new_state_epoch(share: Share) -> None:
    share.fetch("m1", max_records=10)
    share.ack("m1", (0, 4, [ACCEPT]))
    answers: list[dict[tuple[object, int], ErrorCode]] = []
    share.tenant.reset(GROUP, {(TOPIC, 0): 42}, answers.append)
    assert answers == [{(TOPIC, 0): NONE}]
    view = share.tenant.describe(GROUP, TOPIC, 0)
    assert view is not None and (view.start_offset, view.state_epoch, view.records) == (42, 1, ())
    assert share.next_offset() == 42
    assert share.timers.advance(LOCK_MS) is None and share.states() == {}  # the old locks are gone


def test_delete_forgets_the_state_with_tombstones(share: Share) -> None:
    share.fetch("m1", max_records=5)
    share.ack("m1", (0, 4, [ACCEPT]))
    answers: list[dict[tuple[object, int], ErrorCode]] = []
    share.tenant.delete(GROUP, None, answers.append)
    assert answers == [{(TOPIC, 0): NONE}]
    assert share.tenant.describe(GROUP, TOPIC, 0) is None
    assert share.tenant.partitions(GROUP) == []


def test_delete_of_a_partition_without_state_answers_none(share: Share) -> None:
    answers: list[dict[tuple[object, int], ErrorCode]] = []
    share.tenant.delete(GROUP, [(TOPIC, 3)], answers.append)
    assert answers == [{(TOPIC, 3): NONE}]
    assert share.records() == []
