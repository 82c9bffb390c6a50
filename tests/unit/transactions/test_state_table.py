"""Every state x request, with Kafka's answer (TransactionCoordinator.scala, trunk Oct 2024):
InitProducerId (prepareInitProducerIdTransit), AddPartitionsToTxn (handleAddPartitionsToTransaction),
verification (handleVerifyPartitionsInTransaction), EndTxn V1 (endTransaction, isValidEpoch's V1
branch) and V2 (its V2 branch: the same epoch, or one below as a retry). Each state is loaded from its
record; Prepare* have their markers held, so their Complete transition is pending, as after a load."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kcoord.coordinator.transactions import TransactionRecord, TransactionState, TransactionValue
from kcoord.protocol.errors import ErrorCode
from tests.unit.transactions.harness import Txn

E = ErrorCode
S = TransactionState
PID, EPOCH, IN, OUT = 7, 5, ("a", 0), ("b", 0)
EMPTY, ONGOING, P_COMMIT, P_ABORT, C_COMMIT, C_ABORT = (S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT,
                                                        S.COMPLETE_COMMIT, S.COMPLETE_ABORT)  # fmt: skip


def _loaded(state: TransactionState, tv: int) -> Txn:
    parts = (IN,) if state in (ONGOING, P_COMMIT, P_ABORT) else ()
    start = -1 if state is EMPTY else 1
    value = TransactionValue(PID, -1, -1, EPOCH, 60_000, state, parts, 1, start, tv)
    t = Txn([TransactionRecord("t", value)], loaded=False)
    t.markers.hold = True
    t.tc.on_loaded()
    return t


def _init(t: Txn) -> Any:
    return t.init(version=4).value.error


def _add(t: Txn) -> Any:
    return t.add(PID, EPOCH, OUT).value


def _verify(t: Txn) -> Any:
    return t.tc.verify_partitions("t", PID, EPOCH, [IN])[IN]


def _end(commit: bool, version: int, epoch_delta: int = 0) -> Callable[[Txn], Any]:
    return lambda t: t.end(PID, EPOCH + epoch_delta, commit, version=version).value.error


ROWS: list[tuple[str, Callable[[Txn], Any], int, dict[TransactionState, ErrorCode]]] = [
    # Empty/Complete*: epoch + 1; Ongoing: fence, abort, CONCURRENT_TRANSACTIONS; Prepare*: CONCURRENT
    ("init", _init, 0, {EMPTY: E.NONE, ONGOING: E.CONCURRENT_TRANSACTIONS,
                        P_COMMIT: E.CONCURRENT_TRANSACTIONS, P_ABORT: E.CONCURRENT_TRANSACTIONS,
                        C_COMMIT: E.NONE, C_ABORT: E.NONE}),
    ("add", _add, 0, {EMPTY: E.NONE, ONGOING: E.NONE, P_COMMIT: E.CONCURRENT_TRANSACTIONS,
                      P_ABORT: E.CONCURRENT_TRANSACTIONS, C_COMMIT: E.NONE, C_ABORT: E.NONE}),
    # verification: the partition in the transaction, or not (a Complete* one has none)
    ("verify", _verify, 0, {EMPTY: E.TRANSACTION_ABORTABLE, ONGOING: E.NONE,
                            P_COMMIT: E.CONCURRENT_TRANSACTIONS, P_ABORT: E.CONCURRENT_TRANSACTIONS,
                            C_COMMIT: E.TRANSACTION_ABORTABLE, C_ABORT: E.TRANSACTION_ABORTABLE}),
    # V1 EndTxn: the pending Complete transition answers CONCURRENT before the kind is looked at
    ("commit v3", _end(True, 3), 0, {EMPTY: E.INVALID_TXN_STATE, ONGOING: E.NONE,
                                     P_COMMIT: E.CONCURRENT_TRANSACTIONS, P_ABORT: E.CONCURRENT_TRANSACTIONS,
                                     C_COMMIT: E.NONE, C_ABORT: E.INVALID_TXN_STATE}),
    ("abort v3", _end(False, 3), 0, {EMPTY: E.INVALID_TXN_STATE, ONGOING: E.NONE,
                                     P_COMMIT: E.CONCURRENT_TRANSACTIONS, P_ABORT: E.CONCURRENT_TRANSACTIONS,
                                     C_COMMIT: E.INVALID_TXN_STATE, C_ABORT: E.NONE}),
    ("commit v0, old epoch", _end(True, 0, -1), 0, {s: E.INVALID_PRODUCER_EPOCH for s in S if s.id <= 5}),
    # V2 EndTxn at the stored epoch: only Empty/Ongoing take it; Prepare*/Complete* want one below
    ("commit v5", _end(True, 5), 2, {EMPTY: E.INVALID_TXN_STATE, ONGOING: E.NONE, P_COMMIT: E.PRODUCER_FENCED,
                                     P_ABORT: E.PRODUCER_FENCED, C_COMMIT: E.PRODUCER_FENCED,
                                     C_ABORT: E.PRODUCER_FENCED}),
    # V2 retry (the epoch one below the stored bump)
    ("commit v5 retry", _end(True, 5, -1), 2, {EMPTY: E.PRODUCER_FENCED, ONGOING: E.PRODUCER_FENCED,
                                               P_COMMIT: E.CONCURRENT_TRANSACTIONS,
                                               P_ABORT: E.CONCURRENT_TRANSACTIONS, C_COMMIT: E.NONE,
                                               C_ABORT: E.INVALID_TXN_STATE}),
]  # fmt: skip

CASES = [
    pytest.param(state, request, tv, expected[state], id=f"{name}-{state.state_name}")
    for name, request, tv, expected in ROWS
    for state in (EMPTY, ONGOING, P_COMMIT, P_ABORT, C_COMMIT, C_ABORT)
]


@pytest.mark.parametrize(("state", "request_", "tv", "expected"), CASES)
def test_state_by_request(state: TransactionState, request_: Callable[[Txn], Any], tv: int,
                          expected: ErrorCode) -> None:  # fmt: skip
    t = _loaded(state, tv)
    assert request_(t) is expected
