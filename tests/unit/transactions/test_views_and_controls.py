"""ListTransactions (TransactionStateManager.listTransactionStates), DescribeTransactions
(TransactionCoordinator.handleDescribeTransactions), and the abort / expire controls."""

from __future__ import annotations

from kcoord.coordinator.transactions import TransactionListing, TransactionState
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import FIRST_ID, Txn

E = ErrorCode
S = TransactionState


def _three() -> Txn:
    t = Txn()
    t.ready("idle")
    t.ongoing("open", ("a", 0))
    pid, epoch = t.ongoing("done", ("a", 1))
    t.end(pid, epoch, tid="done")
    return t


def test_list_filters_by_state_producer_id_and_duration() -> None:
    t = _three()
    everything = t.tc.list_transactions()
    assert everything.error is E.NONE
    assert {(x.transactional_id, x.transaction_state) for x in everything.transaction_states} == {
        ("idle", "Empty"), ("open", "Ongoing"), ("done", "CompleteCommit"),
    }  # fmt: skip
    by_state = t.tc.list_transactions(state_filters=["Ongoing", "Bogus"])
    assert by_state.transaction_states == (TransactionListing("open", FIRST_ID + 1, "Ongoing"),)
    assert by_state.unknown_state_filters == ("Bogus",)
    by_id = t.tc.list_transactions(producer_id_filters=[FIRST_ID])
    assert [x.transactional_id for x in by_id.transaction_states] == ["idle"]
    t.clock.advance(5000)
    # v1's duration filter: running longer than it (an Empty id's start is -1: always longer)
    longer = t.tc.list_transactions(duration_filter_ms=4000)
    assert {x.transactional_id for x in longer.transaction_states} == {"idle", "open", "done"}
    assert {
        x.transactional_id for x in t.tc.list_transactions(duration_filter_ms=6000).transaction_states
    } == {"idle"}


def test_list_while_loading() -> None:
    assert Txn(loaded=False).tc.list_transactions().error is E.COORDINATOR_LOAD_IN_PROGRESS


def test_describe() -> None:
    t = Txn()
    pid, epoch = t.ongoing("open", ("b", 1), ("a", 2), ("a", 0))
    (d,) = t.tc.describe_transactions(["open"])
    assert (d.error, d.transaction_state, d.producer_id, d.producer_epoch) == (E.NONE, "Ongoing", pid, epoch)
    assert d.topics == (("a", (0, 2)), ("b", (1,)))
    assert (d.transaction_timeout_ms, d.transaction_start_time_ms) == (60_000, t.clock.now_ms())
    missing, empty = t.tc.describe_transactions(["nope", ""])
    assert missing.error is E.TRANSACTIONAL_ID_NOT_FOUND and empty.error is E.INVALID_REQUEST


def test_abort_control_fences_and_aborts() -> None:
    t = Txn()
    pid, epoch = t.ongoing()
    assert t.abort().value.error is E.NONE
    assert t.md().state is S.COMPLETE_ABORT and t.md().producer_epoch == epoch + 1
    assert t.end(pid, epoch).value.error is E.PRODUCER_FENCED
    assert t.abort().value.error is E.INVALID_TXN_STATE
    assert t.abort("nope").value.error is E.TRANSACTIONAL_ID_NOT_FOUND


def test_expire_control() -> None:
    t = Txn()
    t.ongoing()
    assert t.expire().value.error is E.INVALID_TXN_STATE  # an open transaction never expires
    t.abort()
    assert t.expire().value.error is E.NONE
    assert t.tc.metadata("t") is None
    # the id starts over with a new producer id
    assert t.init().value.producer_id == FIRST_ID + 1


def test_controls_while_a_transition_is_in_flight() -> None:
    t = Txn()
    t.ongoing()
    t.log.hold = True
    t.abort()
    assert t.abort().value.error is E.CONCURRENT_TRANSACTIONS


def test_partition_for_is_kafkas() -> None:
    assert Txn().tc.partition_for("hello") == 99162322 % 50


def test_stats_count_open_and_completed_transactions() -> None:
    t = Txn()
    pid, epoch = t.ongoing("a")
    start = t.clock.now_ms()
    t.clock.advance(10)
    t.ongoing("b")
    t.end(pid, epoch, True, tid="a")
    s = t.tc.stats()
    assert (s.open, s.oldest_open_start_ms, s.commits, s.aborts) == (1, start + 10, 1, 0)
    t.abort("b")
    assert (t.tc.stats().open, t.tc.stats().aborts) == (0, 1)
