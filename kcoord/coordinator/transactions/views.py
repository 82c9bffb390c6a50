"""The read side: ListTransactions and DescribeTransactions (TransactionStateManager.
listTransactionStates, TransactionCoordinator.handleDescribeTransactions)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kcoord.coordinator.runtime import PHASE_ERRORS, Phase
from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.results import (
    ListTransactionsResult,
    TransactionDescription,
    TransactionListing,
)
from kcoord.coordinator.transactions.state import TransactionState
from kcoord.protocol.errors import ErrorCode

__all__ = ["describe_transactions", "list_transactions"]

S = TransactionState


def list_transactions(
    core: TxnCore,
    state_filters: Collection[str],
    producer_id_filters: Collection[int],
    duration_filter_ms: int = -1,
) -> ListTransactionsResult:
    """Every id but Dead ones, filtered; unknown state names are listed back, not refused. The
    duration filter (v1) keeps transactions running longer than it (an Empty one's start is -1)."""
    if (error := core.runtime.phases.node_error) is not None:  # every id this node holds
        return ListTransactionsResult(error)
    states = {s for name in state_filters if (s := TransactionState.from_name(name)) is not None}
    unknown = tuple(name for name in state_filters if TransactionState.from_name(name) is None)
    now = core.now_ms()
    listings = []
    for md in core.txns.values():
        if md.state is S.DEAD or (producer_id_filters and md.producer_id not in producer_id_filters):
            continue
        if state_filters and md.state not in states:
            continue
        if duration_filter_ms >= 0 and now - md.start_ms <= duration_filter_ms:
            continue
        listings.append(TransactionListing(md.transactional_id, md.producer_id, md.state.state_name))
    return ListTransactionsResult(ErrorCode.NONE, unknown, tuple(listings))


def describe_transactions(core: TxnCore, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
    return [_describe(core, txn_id) for txn_id in transactional_ids]


def _describe(core: TxnCore, txn_id: str) -> TransactionDescription:
    phase = core.runtime.phases.phase(txn_id)
    if phase is Phase.SHUT_DOWN:
        return TransactionDescription(txn_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not txn_id:
        return TransactionDescription(txn_id, ErrorCode.INVALID_REQUEST)
    if (error := PHASE_ERRORS[phase]) is not None:
        return TransactionDescription(txn_id, error)
    md = core.txns.get(txn_id)
    if md is None or md.state is S.DEAD:
        return TransactionDescription(txn_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(md.partitions):
        topics.setdefault(topic, []).append(partition)
    return TransactionDescription(
        txn_id, ErrorCode.NONE, md.state.state_name, md.timeout_ms, md.start_ms, md.producer_id,
        md.producer_epoch, tuple((t, tuple(ps)) for t, ps in topics.items()),
    )  # fmt: skip
