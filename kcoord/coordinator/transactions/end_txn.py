"""EndTxn and the aborts the coordinator starts itself (Kafka's TransactionCoordinator.endTransaction).

Check order (Kafka): "" -> INVALID_REQUEST; loading -> COORDINATOR_LOAD_IN_PROGRESS; unknown id or
another producer id -> INVALID_PRODUCER_ID_MAPPING; a wrong epoch -> PRODUCER_FENCED; a transition in
flight -> CONCURRENT_TRANSACTIONS; then by state: Ongoing -> Prepare* (answered once durable, markers
after); Complete* of the same kind -> NONE (an idempotent retry); Prepare* of the same kind ->
CONCURRENT_TRANSACTIONS; anything else -> INVALID_TXN_STATE.

Transactions V2 (client transaction version 2, EndTxn v5): every EndTxn bumps the epoch (a new
producer id once the epoch is exhausted), the answer names the producer id and epoch of the next
transaction, and a retry is recognised by the epoch being one below the stored one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.coordinator.transactions.results import EndTxnResult, OnEnd
from kcoord.coordinator.transactions.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TransactionState,
    supports_epoch_bump,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["EndTxn", "EndTxnRequest"]

S = TransactionState
_PREPARE = {True: S.PREPARE_COMMIT, False: S.PREPARE_ABORT}
_COMPLETE = {True: S.COMPLETE_COMMIT, False: S.COMPLETE_ABORT}


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    from_client: bool
    client_transaction_version: int


def _v2_rules(md: TransactionMetadata, r: EndTxnRequest) -> bool:
    """Whether V2's epoch rules apply. Kafka (trunk, Oct 2024) asks the stored client version only;
    a fence the server aborted under transaction.version 2 then stores 2 for a V1 client, whose
    zombie EndTxn at the fenced-off epoch would pass as a V2 retry. So a client's own request must
    be V2 (EndTxn v5) as well (docs/compat-transactions.md)."""
    if md.pending is S.PREPARE_EPOCH_FENCE or not md.is_v2:
        return False
    return not r.from_client or supports_epoch_bump(r.client_transaction_version)


def _valid_epoch(md: TransactionMetadata, r: EndTxnRequest, retry_on_overflow: bool) -> bool:
    if _v2_rules(md, r):
        bumped = md.producer_epoch == r.producer_epoch + 1  # endTxnEpochBumped: a retry
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return bumped
        if md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return bumped or retry_on_overflow
        return r.producer_epoch == md.producer_epoch
    # V1: the client's epoch must be the stored one; the coordinator's own abort may be above it
    return (
        not r.from_client or r.producer_epoch == md.producer_epoch
    ) and r.producer_epoch >= md.producer_epoch


def _by_state(md: TransactionMetadata, commit: bool) -> ErrorCode | None:
    """The answer of a state other than Ongoing (None: Ongoing, go on)."""
    if md.state is S.ONGOING:
        return None
    if md.state is _COMPLETE[commit]:
        return ErrorCode.NONE
    if md.state is _PREPARE[commit]:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return ErrorCode.INVALID_TXN_STATE  # Empty, the other kind (Dead / PrepareEpochFence never live)


class EndTxn:
    def __init__(self, core: TxnCore) -> None:
        self.core = core

    def end(self, r: EndTxnRequest, done: OnEnd, next_producer_id: int | None = None) -> None:
        if not r.transactional_id:
            done(EndTxnResult(ErrorCode.INVALID_REQUEST))
            return
        if (phase := self.core.runtime.phase_error(r.transactional_id)) is not None:
            done(EndTxnResult(phase))
            return
        md = self.core.txns.get(r.transactional_id)
        if md is None:
            done(EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
            return
        error = self._check(md, r)
        if error is not None:
            ok = error is ErrorCode.NONE  # an idempotent retry: the stored producer id and epoch
            done(EndTxnResult(error, md.producer_id, md.producer_epoch) if ok else EndTxnResult(error))
            return
        fencing = md.pending is S.PREPARE_EPOCH_FENCE
        bump = supports_epoch_bump(r.client_transaction_version) and not fencing
        if bump and md.is_producer_epoch_exhausted and next_producer_id is None:
            self._allocate_then_end(r, done)
            return
        self._prepare(md, r, done, next_producer_id if bump and md.is_producer_epoch_exhausted else None)

    def _check(self, md: TransactionMetadata, r: EndTxnRequest) -> ErrorCode | None:
        retry_on_overflow = (
            _v2_rules(md, r) and md.previous_producer_id == r.producer_id
            and r.producer_epoch == SHORT_MAX - 1 and md.producer_epoch == 0
        )  # fmt: skip
        if md.producer_id != r.producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not _valid_epoch(md, r, retry_on_overflow):
            return ErrorCode.PRODUCER_FENCED
        if md.pending is not None and md.pending is not S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return _by_state(md, r.commit)

    def _allocate_then_end(self, r: EndTxnRequest, done: OnEnd) -> None:
        def allocated(producer_id: int | None, error: BaseException | None) -> None:
            if producer_id is None:
                done(EndTxnResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            else:
                self.end(r, done, producer_id)

        self.core.producer_ids.allocate(allocated)

    def _prepare(
        self, md: TransactionMetadata, r: EndTxnRequest, done: OnEnd, next_producer_id: int | None
    ) -> None:
        fencing = md.pending is S.PREPARE_EPOCH_FENCE and not r.commit
        if fencing:  # the fence's bump goes into the PrepareAbort record itself
            md.pending = None
            md.producer_epoch = r.producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        # KAFKA-19367: the fenced epoch is the abort's epoch; a V2 server does not bump it twice
        bump = supports_epoch_bump(r.client_transaction_version) and not fencing
        nxt = NO_PRODUCER_ID if next_producer_id is None else next_producer_id
        transit = md.prepare_abort_or_commit(_PREPARE[r.commit], r.client_transaction_version, nxt,
                                             self.core.now_ms(), bump)  # fmt: skip

        def written(error: ErrorCode) -> None:
            if error is not ErrorCode.NONE:
                if fencing and self.core.txns.get(md.transactional_id) is md:
                    md.has_failed_epoch_fence = True  # the bump stays in memory, never answered
                done(EndTxnResult(error))
                return
            self._after_prepare(md, r, done)

        self.core.append(md, transit, written)

    def _after_prepare(self, md: TransactionMetadata, r: EndTxnRequest, done: OnEnd) -> None:
        """The Prepare record is durable: answer, then markers and the Complete record."""
        if md.pending is not None or md.state is not _PREPARE[r.commit]:
            done(EndTxnResult(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        complete = md.prepare_complete(self.core.now_ms())
        # The producer id and epoch of the next transaction (V2; V1 answers the unchanged ones).
        done(EndTxnResult(ErrorCode.NONE, complete.producer_id, complete.producer_epoch))
        self.core.send_markers(md, r.commit, complete)
