"""EndTxn, row by row against Kafka's TransactionCoordinator.endTransaction (V1 and the V2 path of
KIP-890 part 2: endTxnEpochBumped, retryOnOverflow, prepareAbortOrCommit, prepareComplete); the
downgrade is KafkaApis.handleEndTxnRequest's (version < 2), the V2 switch its version > 4."""

from __future__ import annotations

import pytest

from kcoord.coordinator.transactions import TransactionRecord, TransactionState, TransactionValue
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import FIRST_ID, MarkerCall, Txn

E = ErrorCode
S = TransactionState


@pytest.mark.parametrize("commit", [True, False])
def test_answered_once_prepare_is_durable_then_markers_then_complete(commit: bool) -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0), ("b", 1))
    t.log.hold = True
    answer = t.end(pid, epoch, commit)
    assert not answer.done and t.markers.calls == []
    t.log.release_first()  # the Prepare record is durable
    assert answer.value.error is E.NONE
    assert t.md().state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert t.markers.calls == [MarkerCall(pid, epoch, commit, 0, (("a", 0), ("b", 1)))]
    t.log.release()  # the Complete record
    assert t.md().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert t.md().partitions == set() and t.md().pending is None
    assert [r.value.state for r in t.records() if r.value] == [
        S.EMPTY, S.ONGOING, S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
        S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT,
    ]  # fmt: skip


@pytest.mark.parametrize("commit", [True, False])
def test_an_idempotent_retry_in_complete_answers_none(commit: bool) -> None:
    t = Txn()
    pid, epoch = t.ongoing()
    t.end(pid, epoch, commit)
    writes = len(t.log.records)
    retry = t.end(pid, epoch, commit).value
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, pid, epoch)
    assert len(t.log.records) == writes
    assert t.end(pid, epoch, not commit).value.error is E.INVALID_TXN_STATE


@pytest.mark.parametrize("commit", [True, False])
def test_while_the_prepare_record_or_the_markers_are_in_flight(commit: bool) -> None:
    t = Txn()
    pid, epoch = t.ongoing()
    t.log.hold = True
    t.end(pid, epoch, commit)
    assert t.end(pid, epoch, commit).value.error is E.CONCURRENT_TRANSACTIONS  # pending Prepare*
    t.markers.hold = True
    t.log.release()
    assert t.end(pid, epoch, commit).value.error is E.CONCURRENT_TRANSACTIONS  # pending Complete*
    assert t.end(pid, epoch, not commit).value.error is E.CONCURRENT_TRANSACTIONS  # pending checked first


def test_failed_markers_keep_the_transaction_in_prepare_with_its_completion_pending() -> None:
    """The markers failed: Prepare* with the Complete transition pending until their retry succeeds."""
    t = Txn()
    pid, epoch = t.ongoing()
    t.markers.fail_with = OSError("partition offline")
    t.end(pid, epoch, True)
    assert t.md().state is S.PREPARE_COMMIT and t.md().pending is S.COMPLETE_COMMIT
    assert t.end(pid, epoch, True).value.error is E.CONCURRENT_TRANSACTIONS


def test_empty_is_invalid_txn_state() -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.end(pid, epoch).value.error is E.INVALID_TXN_STATE


@pytest.mark.parametrize(
    ("tid", "pid_delta", "epoch_delta", "version", "error"),
    [
        ("", 0, 0, 3, E.INVALID_REQUEST),
        ("other", 0, 0, 3, E.INVALID_PRODUCER_ID_MAPPING),
        ("t", 1, 0, 3, E.INVALID_PRODUCER_ID_MAPPING),
        ("t", 0, 1, 3, E.PRODUCER_FENCED),  # V1: strict equality for the client
        ("t", 0, -1, 2, E.PRODUCER_FENCED),
        ("t", 0, -1, 1, E.INVALID_PRODUCER_EPOCH),  # KafkaApis: version < 2
        ("t", 0, 1, 0, E.INVALID_PRODUCER_EPOCH),
    ],
)
def test_identity_errors(tid: str, pid_delta: int, epoch_delta: int, version: int, error: ErrorCode) -> None:
    t = Txn()
    t.ready()
    pid, epoch = t.ongoing()
    r = t.end(pid + pid_delta, epoch + epoch_delta, tid=tid, version=version).value
    assert (r.error, r.producer_id, r.producer_epoch) == (error, -1, -1)
    assert t.md().state is S.ONGOING


def test_a_failed_prepare_write_leaves_ongoing() -> None:
    t = Txn()
    pid, epoch = t.ongoing()
    t.log.fail_with = OSError("disk full")
    assert t.end(pid, epoch).value.error is E.NOT_COORDINATOR
    assert t.md().state is S.ONGOING and t.md().pending is None and t.markers.calls == []
    t.log.fail_with = None
    assert t.end(pid, epoch).value.error is E.NONE


def test_loading() -> None:
    assert Txn(loaded=False).end(1, 0).value.error is E.COORDINATOR_LOAD_IN_PROGRESS


# -- transactions V2 (EndTxn v5) -------------------------------------------------------------------
def test_v2_bumps_the_epoch_every_transaction_and_answers_it() -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.add_implicit(pid, epoch, ("a", 0)).value is E.NONE
    r = t.end(pid, epoch, version=5).value
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, pid, epoch + 1)
    assert t.markers.calls[-1].producer_epoch == epoch + 1  # markers at the bumped epoch
    assert (t.md().state, t.md().producer_epoch) == (S.COMPLETE_COMMIT, epoch + 1)
    # the next transaction runs at the new epoch
    assert t.add_implicit(pid, epoch + 1, ("a", 0)).value is E.NONE
    assert t.end(pid, epoch + 1, False, version=5).value.producer_epoch == epoch + 2


def test_v2_retries_are_recognised_by_the_epoch_below() -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.add_implicit(pid, epoch)
    t.end(pid, epoch, version=5)
    retry = t.end(pid, epoch, version=5).value  # retryOnEpochBump
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, pid, epoch + 1)
    assert t.end(pid, epoch, False, version=5).value.error is E.INVALID_TXN_STATE
    # the bumped epoch itself in Complete*: not a retry, fenced (Kafka: "Return producer fenced")
    assert t.end(pid, epoch + 1, version=5).value.error is E.PRODUCER_FENCED


def test_v2_retry_while_the_markers_are_written() -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.add_implicit(pid, epoch)
    t.markers.hold = True
    t.end(pid, epoch, version=5)
    assert t.end(pid, epoch, version=5).value.error is E.CONCURRENT_TRANSACTIONS
    assert t.end(pid, epoch + 1, version=5).value.error is E.PRODUCER_FENCED


def test_v2_exhausted_epoch_rotates_the_producer_id_at_the_end() -> None:
    value = TransactionValue(7, -1, -1, 32766, 60_000, S.ONGOING, (("a", 0),), 1, 1, 2)
    t = Txn([TransactionRecord("t", value)])
    r = t.end(7, 32766, version=5).value
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, FIRST_ID, 0)
    assert t.markers.calls[-1] == MarkerCall(7, 32767, True, 0, (("a", 0),))  # old id, last epoch
    md = t.md()
    assert (md.producer_id, md.producer_epoch, md.previous_producer_id, md.next_producer_id) == (
        FIRST_ID,
        0,
        7,
        -1,
    )
    retry = t.end(7, 32766, version=5).value  # retryOnOverflow
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, FIRST_ID, 0)


def test_v1_client_on_a_v2_server_keeps_its_epoch() -> None:
    t = Txn(transaction_version=2)
    pid, epoch = t.ongoing()
    r = t.end(pid, epoch, version=4).value
    assert (r.error, r.producer_epoch) == (E.NONE, epoch)
    assert t.md().producer_epoch == epoch and t.md().client_transaction_version == 0
