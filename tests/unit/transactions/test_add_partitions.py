"""AddPartitionsToTxn / AddOffsetsToTxn / verification, row by row against Kafka's
TransactionCoordinator.handleAddPartitionsToTransaction and handleVerifyPartitionsInTransaction;
the downgrade is KafkaApis' (AddPartitionsToTxn and AddOffsetsToTxn < v2)."""

from __future__ import annotations

import pytest

from kcoord.coordinator.transactions import TransactionState, offsets_partition_for
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import Txn

E = ErrorCode
S = TransactionState


def test_empty_to_ongoing_once_durable() -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.clock.advance(5)
    t.log.hold = True
    answer = t.add(pid, epoch, ("a", 0), ("a", 1))
    assert not answer.done and t.md().state is S.EMPTY and t.md().pending is S.ONGOING
    t.log.release()
    assert answer.value is E.NONE
    assert t.md().state is S.ONGOING and t.md().partitions == {("a", 0), ("a", 1)}
    assert t.md().start_ms == t.clock.now_ms()


def test_partitions_already_in_answer_none_without_a_write() -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0), ("a", 1))
    writes = len(t.log.records)
    assert t.add(pid, epoch, ("a", 1)).value is E.NONE
    assert len(t.log.records) == writes


def test_more_partitions_keep_the_start_time() -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    start = t.md().start_ms
    t.clock.advance(10)
    assert t.add(pid, epoch, ("b", 0)).value is E.NONE
    assert t.md().start_ms == start and t.md().partitions == {("a", 0), ("b", 0)}


@pytest.mark.parametrize(
    ("tid", "pid_delta", "epoch_delta", "version", "error"),
    [
        ("", 0, 0, 3, E.INVALID_REQUEST),
        ("other", 0, 0, 3, E.INVALID_PRODUCER_ID_MAPPING),  # unknown id
        ("t", 1, 0, 3, E.INVALID_PRODUCER_ID_MAPPING),  # another producer id
        ("t", 0, 1, 3, E.PRODUCER_FENCED),
        ("t", 0, -1, 2, E.PRODUCER_FENCED),
        ("t", 0, -1, 1, E.INVALID_PRODUCER_EPOCH),  # KafkaApis: version < 2
        ("t", 0, -1, 0, E.INVALID_PRODUCER_EPOCH),
    ],
)
def test_identity_errors(tid: str, pid_delta: int, epoch_delta: int, version: int, error: ErrorCode) -> None:
    t = Txn()
    t.ready()
    pid, epoch = t.ready()
    assert t.add(pid + pid_delta, epoch + epoch_delta, tid=tid, version=version).value is error
    assert t.md().state is S.EMPTY


def test_wrong_producer_id_is_checked_before_a_transition_in_flight() -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.log.hold = True
    t.add(pid, epoch, ("a", 0))
    assert t.add(pid + 1, epoch).value is E.INVALID_PRODUCER_ID_MAPPING
    assert t.add(pid, epoch + 1).value is E.PRODUCER_FENCED
    assert t.add(pid, epoch, ("b", 0)).value is E.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("commit", [True, False])
def test_during_the_markers_concurrent_transactions(commit: bool) -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    t.markers.hold = True
    assert t.end(pid, epoch, commit).value.error is E.NONE
    assert t.add(pid, epoch, ("b", 0)).value is E.CONCURRENT_TRANSACTIONS
    assert t.add_offsets(pid, epoch).value is E.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("commit", [True, False])
def test_a_complete_transaction_starts_the_next_one(commit: bool) -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    assert t.end(pid, epoch, commit).value.error is E.NONE
    t.clock.advance(7)
    assert t.add(pid, epoch, ("b", 0)).value is E.NONE
    assert t.md().state is S.ONGOING and t.md().partitions == {("b", 0)}
    assert t.md().start_ms == t.clock.now_ms()


def test_a_failed_write_leaves_the_state_and_answers_not_coordinator() -> None:
    t = Txn()
    pid, epoch = t.ready()
    t.log.fail_with = OSError("disk full")
    assert t.add(pid, epoch, ("a", 0)).value is E.NOT_COORDINATOR
    assert t.md().state is S.EMPTY and t.md().pending is None and t.md().partitions == set()


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.add_offsets(pid, epoch, "polygenelubricants").value is E.NONE
    # String.hashCode of this id is Integer.MIN_VALUE: Utils.abs gives 0
    assert t.md().partitions == {("__consumer_offsets", 0)}
    assert offsets_partition_for("hello") == ("__consumer_offsets", 99162322 % 50)


@pytest.mark.parametrize(("version", "error"), [(1, E.INVALID_PRODUCER_EPOCH), (2, E.PRODUCER_FENCED)])
def test_add_offsets_downgrade(version: int, error: ErrorCode) -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.add_offsets(pid, epoch + 1, version=version).value is error


def test_the_implicit_add_marks_the_transaction_v2() -> None:
    t = Txn()
    pid, epoch = t.ready()
    assert t.add_implicit(pid, epoch, ("a", 0)).value is E.NONE
    assert t.md().client_transaction_version == 2
    assert t.records()[-1].value is not None and t.records()[-1].value.client_transaction_version == 2


# -- verification (AddPartitionsToTxn v4+ verify_only, Produce's KIP-890 part 1 check) -------------
def test_verify_per_partition() -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    writes = len(t.log.records)
    got = t.tc.verify_partitions("t", pid, epoch, [("a", 0), ("a", 1)])
    assert got == {("a", 0): E.NONE, ("a", 1): E.TRANSACTION_ABORTABLE}
    assert len(t.log.records) == writes


@pytest.mark.parametrize(
    ("tid", "pid_delta", "epoch_delta", "error"),
    [("", 0, 0, E.INVALID_REQUEST), ("x", 0, 0, E.INVALID_PRODUCER_ID_MAPPING),
     ("t", 1, 0, E.INVALID_PRODUCER_ID_MAPPING), ("t", 0, 1, E.PRODUCER_FENCED)],
)  # fmt: skip
def test_verify_identity_errors_for_every_partition(
    tid: str, pid_delta: int, epoch_delta: int, error: ErrorCode
) -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    got = t.tc.verify_partitions(tid, pid + pid_delta, epoch + epoch_delta, [("a", 0), ("b", 0)])
    assert got == {("a", 0): error, ("b", 0): error}


def test_verify_during_the_markers_is_concurrent_transactions() -> None:
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    t.markers.hold = True
    t.end(pid, epoch)
    assert t.tc.verify_partitions("t", pid, epoch, [("a", 0)]) == {("a", 0): E.CONCURRENT_TRANSACTIONS}


def test_verify_ignores_a_transition_in_flight() -> None:
    """Kafka does not check the pending state: the append is validated again."""
    t = Txn()
    pid, epoch = t.ongoing("t", ("a", 0))
    t.log.hold = True
    t.add(pid, epoch, ("b", 0))
    assert t.tc.verify_partitions("t", pid, epoch, [("a", 0)]) == {("a", 0): E.NONE}


def test_txn_offset_commit_check_is_nothing_as_in_kafka() -> None:
    t = Txn()
    assert t.tc.txn_offset_commit_check("t", 1, 0, "g") is None
