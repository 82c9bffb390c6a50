"""What every part of the transaction coordinator shares: its ports, the metadata of every
transactional id, and the one write path (Kafka's TransactionStateManager.appendTransactionToLog,
run through the shared runtime, `coordinator.runtime`), plus the marker half of EndTxn
(TransactionMarkerChannelManager: markers, then the Complete record).

A transition's record is written with the live state unchanged (`pending` set); once durable the
metadata completes the transition in place (`TransactionMetadata.complete_transition_to`), as
Kafka's callback does, so the replay path (`apply`) is used by recovery only. A failed append
clears `pending` and answers NOT_COORDINATOR (Kafka maps KAFKA_STORAGE_ERROR to it), except the
Complete record after the markers, which keeps `pending` and is retried until it is durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kcoord.coordinator.runtime import CoordinatorRuntime, KeyedTimers, ShardPhases, Write
from kcoord.coordinator.runtime.time import Clock
from kcoord.coordinator.transactions.config import TransactionConfig
from kcoord.coordinator.transactions.metadata import TransactionMetadata, TxnTransit
from kcoord.coordinator.transactions.ports import MarkerWriter, ProducerIdAllocator, TransactionLog
from kcoord.coordinator.transactions.records import TransactionRecord
from kcoord.coordinator.transactions.state import TransactionState
from kcoord.protocol.errors import ErrorCode

__all__ = ["APPEND_FAILED", "TxnCore", "complete_key", "markers_key"]

log = logging.getLogger("kcoord.transactions")

S = TransactionState
# TransactionStateManager.appendTransactionToLog: KAFKA_STORAGE_ERROR -> NOT_COORDINATOR
APPEND_FAILED = ErrorCode.NOT_COORDINATOR
OnAppended = Callable[[ErrorCode], None]


def markers_key(transactional_id: str) -> str:
    return f"txn-markers:{transactional_id}"


def complete_key(transactional_id: str) -> str:
    return f"txn-complete:{transactional_id}"


class TxnCore:
    def __init__(
        self,
        config: TransactionConfig,
        clock: Clock,
        timers: KeyedTimers,
        log_: TransactionLog,
        producer_ids: ProducerIdAllocator,
        markers: MarkerWriter,
        phases: ShardPhases | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.timers = timers
        self.runtime: CoordinatorRuntime[TransactionRecord] = CoordinatorRuntime(log_, phases)
        self.runtime.apply = self.apply
        self.producer_ids = producer_ids
        self.markers = markers
        self.txns: dict[str, TransactionMetadata] = {}
        self.completed = {True: 0, False: 0}
        """Transactions completed since start (their Complete record durable): commit -> count."""

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # -- replay ----------------------------------------------------------------------------------
    def apply(self, record: TransactionRecord) -> None:
        """Recovery (TransactionStateManager.loadTransactionMetadata): the last record of an id wins."""
        if record.value is None:
            self.txns.pop(record.transactional_id, None)
        else:
            self.txns[record.transactional_id] = TransactionMetadata.from_record(
                record.transactional_id, record.value
            )

    # -- the write path --------------------------------------------------------------------------
    def append(
        self, md: TransactionMetadata, transit: TxnTransit, done: OnAppended, *, keep_pending: bool = False
    ) -> None:
        """Write `transit` (its `pending` already set); once durable complete it, then `done(NONE)`.
        On failure clear `pending` (unless `keep_pending`: the caller retries) and `done(APPEND_FAILED)`."""
        txn_id = md.transactional_id
        record = transit.record(txn_id) if transit.state is not S.DEAD else TransactionRecord(txn_id, None)

        def written(error: BaseException | None) -> None:
            current = self.txns.get(txn_id)
            if current is not md:  # expired or replaced meanwhile (Kafka: NOT_COORDINATOR)
                done(ErrorCode.NOT_COORDINATOR)
                return
            if error is not None:
                log.warning("transaction %s: writing %s failed: %s", txn_id, transit.state.state_name, error)
                if not keep_pending:
                    md.pending = None
                done(APPEND_FAILED)
                return
            if transit.state is S.DEAD:
                del self.txns[txn_id]
            else:
                md.complete_transition_to(transit)
            done(ErrorCode.NONE)

        self.runtime.run(Write([record], written, durable=()))

    # -- markers, then the Complete record (TransactionMarkerChannelManager) ----------------------
    def send_markers(self, md: TransactionMetadata, commit: bool, complete: TxnTransit) -> None:
        """Write the markers of a transaction in Prepare* (its `pending` is the Complete state), then
        its Complete record; a failed marker write or record is retried after the backoff."""
        txn_id = md.transactional_id
        partitions = sorted(md.partitions)
        if not partitions:
            self._write_complete(md, complete)
            return

        def written(error: BaseException | None) -> None:
            if self.txns.get(txn_id) is not md or md.pending is not complete.state:
                return  # expired by an operator or replaced: nothing left to complete
            if error is not None:
                log.warning("transaction %s: markers failed (%s); retrying", txn_id, error)
                retry = lambda: self.send_markers(md, commit, complete)  # noqa: E731
                self.timers.schedule(markers_key(txn_id), self.config.marker_retry_backoff_ms, retry)
                return
            self._write_complete(md, complete)

        self.markers.write_markers(md.producer_id, md.producer_epoch, commit, self.config.coordinator_epoch,
                                   partitions, written)  # fmt: skip

    def _write_complete(self, md: TransactionMetadata, complete: TxnTransit) -> None:
        txn_id = md.transactional_id

        def written(error: ErrorCode) -> None:
            if error is ErrorCode.NONE:
                self.completed[complete.state is S.COMPLETE_COMMIT] += 1
            elif error is APPEND_FAILED and self.txns.get(txn_id) is md and md.pending is complete.state:
                retry = lambda: self._write_complete(md, complete)  # noqa: E731
                self.timers.schedule(complete_key(txn_id), self.config.marker_retry_backoff_ms, retry)

        self.append(md, complete, written, keep_pending=True)
