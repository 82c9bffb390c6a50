"""The coordinator's own work on a fake clock: timed-out transactions aborted with an epoch bump
(TransactionCoordinator.abortTimedOutTransactions every
transaction.abort.timed.out.transaction.cleanup.interval.ms), idle ids expired
(TransactionStateManager.removeExpiredTransactionalIds every
transaction.remove.expired.transaction.cleanup.interval.ms after transactional.id.expiration.ms),
markers and the Complete record retried until durable, Prepare* completed at load."""

from __future__ import annotations

from kcoord.coordinator.transactions import TransactionRecord, TransactionState, TransactionValue
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import MarkerCall, Txn

E = ErrorCode
S = TransactionState
DAY = 24 * 3_600_000


def test_a_timed_out_transaction_is_aborted_with_an_epoch_bump_on_the_next_pass() -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.init(timeout=15_000).value.error is E.NONE
    epoch += 1
    assert t.add(pid, epoch, ("a", 0)).value is E.NONE
    t.timers.advance(10_000)  # first pass: 10 s in, not timed out
    assert t.md().state is S.ONGOING
    t.timers.advance(10_000)  # second pass: 20 s > 15 s
    assert t.md().state is S.COMPLETE_ABORT and t.md().producer_epoch == epoch + 1
    assert t.markers.calls == [MarkerCall(pid, epoch + 1, False, 0, (("a", 0),))]
    # the zombie is fenced
    assert t.end(pid, epoch).value.error is E.PRODUCER_FENCED
    assert t.add(pid, epoch, ("a", 1)).value is E.PRODUCER_FENCED


def test_the_abort_interval_is_configurable() -> None:
    t = Txn(abort_timed_out_transaction_cleanup_interval_ms=1000)
    assert t.init(timeout=1).value.error is E.NONE
    pid, epoch = t.md().producer_id, t.md().producer_epoch
    t.add(pid, epoch)
    t.timers.advance(1000)
    assert t.md().state is S.COMPLETE_ABORT


def test_a_transaction_in_flight_is_not_timed_out() -> None:
    t = Txn()
    assert t.init(timeout=1).value.error is E.NONE
    pid, epoch = t.md().producer_id, t.md().producer_epoch
    t.add(pid, epoch)
    t.markers.hold = True
    t.end(pid, epoch)
    t.timers.advance(20_000)
    assert t.md().state is S.PREPARE_COMMIT
    t.markers.release()
    assert t.md().state is S.COMPLETE_COMMIT


def test_idle_ids_expire_with_a_tombstone() -> None:
    t = Txn()
    t.ready()
    t.timers.advance(7 * DAY - 1)  # the hourly passes see it not idle long enough
    assert t.tc.metadata("t") is not None
    t.timers.advance(3_600_000)
    assert t.tc.metadata("t") is None
    assert t.log.records[-1] == TransactionRecord("t", None)
    assert t.tc.describe_transactions(["t"])[0].error is E.TRANSACTIONAL_ID_NOT_FOUND


def test_an_ongoing_transaction_never_expires() -> None:
    t = Txn(abort_timed_out_transaction_cleanup_interval_ms=10 * DAY)  # no timeout abort meanwhile
    t.ongoing()
    t.timers.advance(8 * DAY)
    assert t.md().state is S.ONGOING


def test_a_failed_tombstone_keeps_the_id() -> None:
    t = Txn(transactional_id_expiration_ms=1000, remove_expired_transaction_cleanup_interval_ms=1000)
    t.ready()
    t.log.fail_with = OSError("disk full")
    t.timers.advance(1000)
    assert t.md().pending is None and t.md().state is S.EMPTY
    t.log.fail_with = None
    t.timers.advance(1000)
    assert t.tc.metadata("t") is None


def test_failed_markers_are_retried_after_the_backoff() -> None:
    t = Txn(marker_retry_backoff_ms=100)
    pid, epoch = t.ongoing()
    t.markers.fail_with = OSError("partition offline")
    assert t.end(pid, epoch).value.error is E.NONE  # answered: the Prepare record is durable
    assert len(t.markers.calls) == 1 and t.md().state is S.PREPARE_COMMIT
    t.timers.advance(100)
    assert len(t.markers.calls) == 2
    t.markers.fail_with = None
    t.timers.advance(100)
    assert len(t.markers.calls) == 3 and t.md().state is S.COMPLETE_COMMIT


def test_a_failed_complete_record_is_retried() -> None:
    t = Txn(marker_retry_backoff_ms=100)
    pid, epoch = t.ongoing()
    t.markers.hold = True
    t.end(pid, epoch)
    t.log.fail_with = OSError("disk full")
    t.markers.release()
    assert t.md().state is S.PREPARE_COMMIT and t.md().pending is S.COMPLETE_COMMIT
    t.log.fail_with = None
    t.timers.advance(100)
    assert t.md().state is S.COMPLETE_COMMIT and t.md().pending is None
    assert len(t.markers.calls) == 1  # the markers were not written again


def test_prepare_found_at_load_is_completed() -> None:
    value = TransactionValue(7, -1, -1, 3, 60_000, S.PREPARE_ABORT, (("a", 0), ("b", 2)), 5, 4, 0)
    t = Txn([TransactionRecord("t", value)], loaded=False)
    assert t.markers.calls == []
    t.tc.on_loaded()
    assert t.markers.calls == [MarkerCall(7, 3, False, 0, (("a", 0), ("b", 2)))]
    assert t.md().state is S.COMPLETE_ABORT


def test_markers_carry_the_configured_coordinator_epoch() -> None:
    t = Txn(coordinator_epoch=4)
    pid, epoch = t.ongoing()
    t.end(pid, epoch)
    assert t.markers.calls[-1].coordinator_epoch == 4
