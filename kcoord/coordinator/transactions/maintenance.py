"""What the coordinator does on its own: completing transactions found in Prepare* at load, aborting
timed-out transactions, expiring idle transactional ids; and the operator / test controls that do
the same on demand.

Kafka: TransactionStateManager.loadTransactionsForTxnTopicPartition (Prepare* -> markers),
TransactionCoordinator.abortTimedOutTransactions every
transaction.abort.timed.out.transaction.cleanup.interval.ms (fence the epoch, then abort; timedOut
= Ongoing, no transition in flight, start + timeout < now), TransactionStateManager.
removeExpiredTransactionalIds every transaction.remove.expired.transaction.cleanup.interval.ms
(Empty / Complete*, no transition in flight, idle for transactional.id.expiration.ms -> Dead pending,
a tombstone, then removed). Timer keys: ``txn-abort-timed-out`` and ``txn-expire-ids``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kcoord.coordinator.transactions.core import TxnCore
from kcoord.coordinator.transactions.end_txn import EndTxn, EndTxnRequest
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.coordinator.transactions.results import ControlResult, EndTxnResult, OnControl
from kcoord.coordinator.transactions.state import EXPIRATION_ALLOWED, TransactionState
from kcoord.protocol.errors import ErrorCode

__all__ = ["ABORT_TIMED_OUT_KEY", "EXPIRE_IDS_KEY", "Maintenance"]

log = logging.getLogger("kcoord.transactions")

S = TransactionState
ABORT_TIMED_OUT_KEY = "txn-abort-timed-out"
EXPIRE_IDS_KEY = "txn-expire-ids"


class Maintenance:
    def __init__(self, core: TxnCore, end: EndTxn) -> None:
        self.core = core
        self.end = end

    # -- load ------------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        """Recovery finished: go active, arm the periodic checks, finish every Prepare* found."""
        core = self.core
        core.runtime.phases.loaded()
        self._arm_abort()
        self._arm_expire()
        self.finish_prepared(lambda _: True)

    def finish_prepared(self, belongs: Callable[[str], bool]) -> None:
        """Write the markers of every transaction `belongs` names found in Prepare*."""
        core = self.core
        for md in list(core.txns.values()):
            if (
                md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
                and md.pending is None
                and belongs(md.transactional_id)
            ):
                log.info(
                    "transaction %s found in %s: writing its markers",
                    md.transactional_id,
                    md.state.state_name,
                )
                core.send_markers(md, md.state is S.PREPARE_COMMIT, md.prepare_complete(core.now_ms()))

    def shutdown(self) -> None:
        self.core.runtime.phases.shut_down()
        self.core.timers.cancel(ABORT_TIMED_OUT_KEY)
        self.core.timers.cancel(EXPIRE_IDS_KEY)

    def _arm_abort(self) -> None:
        interval = self.core.config.abort_timed_out_transaction_cleanup_interval_ms
        self.core.timers.schedule(ABORT_TIMED_OUT_KEY, interval, self._abort_timed_out_pass)

    def _arm_expire(self) -> None:
        interval = self.core.config.remove_expired_transaction_cleanup_interval_ms
        self.core.timers.schedule(EXPIRE_IDS_KEY, interval, self._expire_pass)

    # -- timed-out transactions ------------------------------------------------------------------
    def _abort_timed_out_pass(self) -> None:
        self._arm_abort()
        now = self.core.now_ms()
        for md in list(self.core.txns.values()):
            if md.pending is None and md.state is S.ONGOING and md.start_ms + md.timeout_ms < now:
                log.info("transaction %s timed out after %d ms: aborting", md.transactional_id, md.timeout_ms)
                self.fence_and_abort(md, _log_outcome(md.transactional_id))

    def fence_and_abort(self, md: TransactionMetadata, done: OnControl) -> None:
        """Bump the epoch (fencing the producer) and abort, as a timeout does."""
        fence = md.prepare_fence_producer_epoch()
        request = EndTxnRequest(md.transactional_id, fence.producer_id, fence.producer_epoch, commit=False,
                                from_client=False,
                                client_transaction_version=self.core.config.transaction_version)  # fmt: skip

        def aborted(result: EndTxnResult) -> None:
            if md.pending is S.PREPARE_EPOCH_FENCE:
                md.pending = None
            done(ControlResult(result.error))

        self.end.end(request, aborted)

    # -- expiration ------------------------------------------------------------------------------
    def _expire_pass(self) -> None:
        self._arm_expire()
        horizon = self.core.now_ms() - self.core.config.transactional_id_expiration_ms
        for md in list(self.core.txns.values()):
            if md.pending is None and md.state in EXPIRATION_ALLOWED and md.last_update_ms <= horizon:
                self.expire_now(md, _log_outcome(md.transactional_id))

    def expire_now(self, md: TransactionMetadata, done: OnControl) -> None:
        log.info("transactional id %s expired", md.transactional_id)
        self.core.append(md, md.prepare_dead(), lambda error: done(ControlResult(error)))

    # -- controls --------------------------------------------------------------------------------
    def control(self, transactional_id: str, action: str, done: OnControl) -> None:
        """`abort` an Ongoing transaction or `expire` an idle id now (operator / test controls)."""
        md = self.core.txns.get(transactional_id)
        if (phase := self.core.runtime.phase_error(transactional_id)) is not None:
            where = self.core.runtime.phases.phase(transactional_id)
            done(ControlResult(phase, f"the coordinator is {where.value}"))
        elif md is None:
            done(
                ControlResult(
                    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, f"no transactional id {transactional_id!r}"
                )
            )
        elif md.pending is not None:
            done(ControlResult(ErrorCode.CONCURRENT_TRANSACTIONS, f"{md.pending.state_name} in flight"))
        elif action == "abort" and md.state is S.ONGOING:
            self.fence_and_abort(md, done)
        elif action == "expire" and md.state in EXPIRATION_ALLOWED:
            self.expire_now(md, done)
        else:
            done(
                ControlResult(ErrorCode.INVALID_TXN_STATE, f"cannot {action} in state {md.state.state_name}")
            )


def _log_outcome(transactional_id: str) -> OnControl:
    def outcome(result: ControlResult) -> None:
        if result.error is not ErrorCode.NONE:
            log.info("transaction %s: %s", transactional_id, result.error.name)

    return outcome
