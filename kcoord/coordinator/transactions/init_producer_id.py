"""InitProducerId with a transactional id (TransactionCoordinator.handleInitProducerId and
prepareInitProducerIdTransit).

Check order (Kafka): "" -> INVALID_REQUEST; a timeout <= 0 or above transaction.max.timeout.ms ->
INVALID_TRANSACTION_TIMEOUT; loading -> COORDINATOR_LOAD_IN_PROGRESS; an unknown id gets a new
producer id (epoch -1, bumped to 0 below); a transition in flight -> CONCURRENT_TRANSACTIONS; a
KIP-360 expected producer id that is neither the current one, nor the previous one with an exhausted
epoch, nor any for a fresh id -> PRODUCER_FENCED; then by state: Prepare* -> CONCURRENT_TRANSACTIONS;
Empty / Complete* -> epoch + 1 (a new producer id at epoch 0 when the epoch is exhausted; a retry of a
bump that succeeded gets the same epoch again); Ongoing -> fence the epoch, abort the transaction and
answer CONCURRENT_TRANSACTIONS, so the client retries once the abort is complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.end_txn import EndTxn, EndTxnRequest
from kcoord.coordinator.transactions.metadata import TransactionMetadata, TxnTransit
from kcoord.coordinator.transactions.results import EndTxnResult, InitProducerIdResult, OnInit
from kcoord.coordinator.transactions.state import (
    NO_PRODUCER_EPOCH,
    IllegalStateTransition,
    TransactionState,
    is_epoch_exhausted,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["InitProducerId", "InitRequest"]

S = TransactionState


@dataclass(frozen=True, slots=True)
class InitRequest:
    transactional_id: str
    transaction_timeout_ms: int
    expected: tuple[int, int] | None  # KIP-360 (producer id, epoch) the client had, if any


def _valid_expected(md: TransactionMetadata, expected: tuple[int, int] | None) -> bool:
    if expected is None:
        return True
    producer_id, epoch = expected
    return (
        md.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == md.producer_id
        or (producer_id == md.previous_producer_id and is_epoch_exhausted(epoch))
    )


class InitProducerId:
    def __init__(self, core: TxnCore, end: EndTxn) -> None:
        self.core = core
        self.end = end

    def init(self, r: InitRequest, done: OnInit, new_producer_id: int | None = None) -> None:
        core = self.core
        if (phase := core.runtime.phase_error(r.transactional_id)) is not None:
            done(InitProducerIdResult(phase))
            return
        md = core.txns.get(r.transactional_id)
        if md is None:
            if new_producer_id is None:
                self._allocate_then_init(r, done)
                return
            md = core.txns[r.transactional_id] = TransactionMetadata(
                r.transactional_id, new_producer_id, timeout_ms=r.transaction_timeout_ms,
                last_update_ms=core.now_ms(),
            )  # fmt: skip
            new_producer_id = None
        if md.pending is not None:
            done(InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        elif not _valid_expected(md, r.expected):
            done(InitProducerIdResult(ErrorCode.PRODUCER_FENCED))
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            done(InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        elif md.state is S.ONGOING:
            self._fence_and_abort(md, done)
        elif md.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            self._bump(md, r, done, new_producer_id)
        else:
            raise IllegalStateTransition(f"{r.transactional_id} found in {md.state}")

    def _allocate_then_init(self, r: InitRequest, done: OnInit) -> None:
        def allocated(producer_id: int | None, error: BaseException | None) -> None:
            if producer_id is None:
                done(InitProducerIdResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            else:
                self.init(r, done, producer_id)

        self.core.producer_ids.allocate(allocated)

    def _bump(
        self, md: TransactionMetadata, r: InitRequest, done: OnInit, new_producer_id: int | None
    ) -> None:
        now = self.core.now_ms()
        rotate = md.is_producer_epoch_exhausted and (r.expected is None or r.expected[1] == md.producer_epoch)
        transit: TxnTransit | ErrorCode
        if rotate:
            if new_producer_id is None:
                self._allocate_then_init(r, done)
                return
            transit = md.prepare_producer_id_rotation(new_producer_id, r.transaction_timeout_ms, now,
                                                      r.expected is not None)  # fmt: skip
        else:
            expected_epoch = None if r.expected is None else r.expected[1]
            transit = md.prepare_increment_producer_epoch(r.transaction_timeout_ms, expected_epoch, now)
        if isinstance(transit, ErrorCode):
            done(InitProducerIdResult(transit))
            return
        answer = InitProducerIdResult(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)

        def written(error: ErrorCode) -> None:
            done(answer if error is ErrorCode.NONE else InitProducerIdResult(error))

        self.core.append(md, transit, written)

    def _fence_and_abort(self, md: TransactionMetadata, done: OnInit) -> None:
        """Fence the producer and abort its transaction; the answer is CONCURRENT_TRANSACTIONS (the
        bumped epoch is never returned: the client's retry bumps it once more)."""
        fence = md.prepare_fence_producer_epoch()
        request = EndTxnRequest(md.transactional_id, fence.producer_id, fence.producer_epoch, commit=False,
                                from_client=False,
                                client_transaction_version=self.core.config.transaction_version)  # fmt: skip

        def aborted(result: EndTxnResult) -> None:
            if md.pending is S.PREPARE_EPOCH_FENCE:  # refused before its write: no fence in flight
                md.pending = None
            ok = result.error is ErrorCode.NONE
            done(InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS if ok else result.error))

        self.end.end(request, aborted)
