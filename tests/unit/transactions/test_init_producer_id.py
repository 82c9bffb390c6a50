"""InitProducerId with a transactional id, row by row against Kafka's
TransactionCoordinator.handleInitProducerId / prepareInitProducerIdTransit and
TransactionMetadata.prepareIncrementProducerEpoch / prepareProducerIdRotation / prepareFenceProducerEpoch;
the PRODUCER_FENCED downgrade is KafkaApis.handleInitProducerIdRequest's (version < 4)."""

from __future__ import annotations

import pytest

from kcoord.coordinator.transactions import TransactionRecord, TransactionState, TransactionValue
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import FIRST_ID, Txn

E = ErrorCode
S = TransactionState


def _stored(state: TransactionState, epoch: int, pid: int = 7, previous: int = -1, tv: int = 0,
            partitions: tuple[tuple[str, int], ...] = ()) -> TransactionRecord:  # fmt: skip
    start = -1 if state is S.EMPTY else 1
    return TransactionRecord(
        "t", TransactionValue(pid, previous, -1, epoch, 60_000, state, partitions, 1, start, tv)
    )


def test_a_new_id_gets_a_new_producer_id_at_epoch_0_once_durable() -> None:
    t = Txn()
    t.log.hold = True
    answer = t.init()
    assert not answer.done  # answered once the Empty record is durable
    t.log.release()
    assert (answer.value.error, answer.value.producer_id, answer.value.producer_epoch) == (
        E.NONE,
        FIRST_ID,
        0,
    )
    (record,) = t.records()
    assert record.value is not None and (record.value.state, record.value.producer_epoch) == (S.EMPTY, 0)


@pytest.mark.parametrize(
    ("tid", "timeout", "pid", "epoch", "error"),
    [
        ("", 60_000, -1, -1, E.INVALID_REQUEST),  # handleInitProducerId: empty id
        ("t", 0, -1, -1, E.INVALID_TRANSACTION_TIMEOUT),  # validateTransactionTimeoutMs: > 0
        ("t", 900_001, -1, -1, E.INVALID_TRANSACTION_TIMEOUT),  # <= transaction.max.timeout.ms
        ("t", 60_000, 5, -1, E.INVALID_REQUEST),  # KafkaApis: an id without an epoch
        ("t", 60_000, -1, 5, E.INVALID_REQUEST),  # ... or an epoch without an id
    ],
)
def test_bad_requests_change_nothing(tid: str, timeout: int, pid: int, epoch: int, error: ErrorCode) -> None:
    t = Txn()
    assert t.init(tid, timeout, pid, epoch).value.error is error
    assert t.log.records == [] and t.tc.metadata("t") is None


def test_the_max_timeout_is_configurable() -> None:
    assert (
        Txn(transaction_max_timeout_ms=1000).init(timeout=1001).value.error is E.INVALID_TRANSACTION_TIMEOUT
    )
    assert Txn(transaction_max_timeout_ms=1000).init(timeout=1000).value.error is E.NONE


def test_loading_answers_coordinator_load_in_progress() -> None:
    assert Txn(loaded=False).init().value.error is E.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_an_idle_id_gets_its_epoch_bumped(state: TransactionState) -> None:
    t = Txn([_stored(state, 3)])
    r = t.init().value
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, 7, 4)
    assert t.md().state is S.EMPTY and t.md().partitions == set()


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_prepare_states_answer_concurrent_transactions(state: TransactionState) -> None:
    t = Txn([_stored(state, 3, partitions=(("out", 0),))], loaded=False)
    t.markers.hold = True
    t.tc.on_loaded()  # the markers of the transaction found in Prepare* are being written
    assert t.init().value.error is E.CONCURRENT_TRANSACTIONS


def test_ongoing_is_fenced_and_aborted_and_the_client_retries() -> None:
    t = Txn()
    pid, epoch = t.ongoing()
    r = t.init().value
    assert r.error is E.CONCURRENT_TRANSACTIONS  # prepareFenceProducerEpoch, then endTransaction(ABORT)
    assert t.markers.calls[-1].producer_epoch == epoch + 1 and not t.markers.calls[-1].commit
    assert t.md().state is S.COMPLETE_ABORT
    again = t.init().value
    assert (again.error, again.producer_id, again.producer_epoch) == (E.NONE, pid, epoch + 2)


def test_ongoing_fence_writes_one_bump_under_transactions_v2() -> None:
    """KAFKA-19367: the fence's bump is the abort's epoch; a V2 server does not bump twice."""
    t = Txn(transaction_version=2)
    _pid, epoch = t.ongoing()
    assert t.init().value.error is E.CONCURRENT_TRANSACTIONS
    assert t.markers.calls[-1].producer_epoch == epoch + 1
    assert t.init().value.producer_epoch == epoch + 2


def test_a_failed_fence_write_does_not_bump_twice() -> None:
    """TransactionMetadata.hasFailedEpochFence: the bump stays in memory and is not repeated."""
    t = Txn()
    _pid, epoch = t.ongoing()
    t.log.fail_with = OSError("disk full")
    assert t.init().value.error is E.NOT_COORDINATOR
    assert t.md().producer_epoch == epoch + 1 and t.md().has_failed_epoch_fence
    t.log.fail_with = None
    assert t.init().value.error is E.CONCURRENT_TRANSACTIONS
    assert t.markers.calls[-1].producer_epoch == epoch + 1  # not epoch + 2
    assert t.init().value.producer_epoch == epoch + 2


def test_a_transition_in_flight_answers_concurrent_transactions() -> None:
    t = Txn()
    t.ready()
    t.log.hold = True
    first = t.init()
    assert t.init().value.error is E.CONCURRENT_TRANSACTIONS
    t.log.release()
    assert first.value.error is E.NONE


def test_a_failed_first_write_keeps_the_producer_id_for_the_retry() -> None:
    t = Txn()
    t.log.fail_with = OSError("disk full")
    assert t.init().value.error is E.NOT_COORDINATOR
    t.log.fail_with = None
    r = t.init().value
    assert (r.producer_id, r.producer_epoch) == (FIRST_ID, 0)  # Kafka keeps the created metadata


def test_producer_id_allocation_failure() -> None:
    t = Txn()
    t.ids.fail = True
    assert t.init().value.error is E.COORDINATOR_NOT_AVAILABLE


# -- KIP-360: the producer names the id and epoch it had ------------------------------------------
def test_kip360_current_epoch_bumps_and_a_retry_of_it_gets_the_same_epoch() -> None:
    t = Txn()
    pid, epoch = t.ready()
    r = t.init(pid=pid, epoch=epoch).value
    assert (r.error, r.producer_epoch) == (E.NONE, epoch + 1)
    retry = t.init(pid=pid, epoch=epoch).value  # expected == lastProducerEpoch: a retry
    assert (retry.error, retry.producer_epoch) == (E.NONE, epoch + 1)


@pytest.mark.parametrize(("version", "error"), [(3, E.INVALID_PRODUCER_EPOCH), (4, E.PRODUCER_FENCED)])
def test_kip360_a_stale_epoch_is_fenced(version: int, error: ErrorCode) -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.ready()
    t.ready()  # the last epoch is reset by a plain InitProducerId
    assert t.init(pid=pid, epoch=epoch, version=version).value.error is error


def test_kip360_another_producer_id_is_fenced() -> None:
    t = Txn()
    t.ready()
    assert t.init(pid=999, epoch=0).value.error is E.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    t = Txn([_stored(S.COMPLETE_COMMIT, 32766)])
    r = t.init().value
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, FIRST_ID, 0)
    assert t.md().previous_producer_id == 7


def test_kip360_retry_with_the_previous_id_after_a_rotation() -> None:
    t = Txn([_stored(S.COMPLETE_COMMIT, 32766)])
    r = t.init(pid=7, epoch=32766).value
    assert (r.producer_id, r.producer_epoch) == (FIRST_ID, 0)
    # the previous id with an exhausted epoch is valid, and the epoch is the last one: a retry of the
    # rotation, answered with the same id and epoch (prepareIncrementProducerEpoch's retry case)
    retry = t.init(pid=7, epoch=32766).value
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (E.NONE, FIRST_ID, 0)
