"""One transactional id's metadata and its transitions (Kafka's TransactionMetadata.scala).

A transition is two steps, as in Kafka: `prepare_*` computes the target (`TxnTransit`, what the log
record will say) and sets `pending`; once the record is durable `complete_transition_to` makes it
the live state (`TransactionMetadata.completeTransitionTo`), or, if the append failed, the caller
clears `pending`. While `pending` is set every other request answers CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kcoord.coordinator.transactions.records import TransactionRecord, TransactionValue
from kcoord.coordinator.transactions.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    VALID_PREVIOUS,
    IllegalStateTransition,
    TransactionState,
    is_epoch_exhausted,
    supports_epoch_bump,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["TransactionMetadata", "TxnTransit"]

S = TransactionState
Partition = tuple[str, int]
_COMPLETE = (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of a transition (Kafka's TxnTransitMetadata); `record()` is what the log gets."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int  # memory only, as in Kafka: TransactionLogValue has no field for it
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[Partition]
    start_ms: int
    last_update_ms: int
    client_transaction_version: int

    def record(self, transactional_id: str) -> TransactionRecord:
        value = TransactionValue(
            producer_id=self.producer_id,
            previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state,
            # TransactionLog.valueToBytes: an Empty transaction has no partitions (null)
            partitions=tuple(sorted(self.partitions)),
            last_update_ms=self.last_update_ms,
            start_ms=self.start_ms,
            client_transaction_version=self.client_transaction_version,
        )
        return TransactionRecord(transactional_id, value)


@dataclass(slots=True, eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    partitions: set[Partition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    client_transaction_version: int = 0
    pending: TransactionState | None = None
    """The state a transition in flight goes to (Kafka's pendingState)."""
    has_failed_epoch_fence: bool = False
    """A fence whose write failed already bumped `producer_epoch` in memory: the next fence must not
    bump it again (Kafka's hasFailedEpochFence; never returned to a client)."""

    @classmethod
    def from_record(cls, transactional_id: str, v: TransactionValue) -> TransactionMetadata:
        """TransactionLog.readTxnRecordValue: the last epoch is not logged, so it loads as -1."""
        return cls(
            transactional_id,
            producer_id=v.producer_id,
            previous_producer_id=v.previous_producer_id,
            next_producer_id=v.next_producer_id,
            producer_epoch=v.producer_epoch,
            timeout_ms=v.timeout_ms,
            state=v.state,
            partitions=set() if v.state is S.EMPTY else set(v.partitions),
            start_ms=v.start_ms,
            last_update_ms=v.last_update_ms,
            client_transaction_version=v.client_transaction_version,
        )

    # -- predicates ----------------------------------------------------------------------------
    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending is not None

    @property
    def is_v2(self) -> bool:
        return supports_epoch_bump(self.client_transaction_version)

    # -- prepare ---------------------------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch to fence the producer before aborting; not again after a failed fence."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalStateTransition(f"{self.transactional_id}: cannot fence at epoch {SHORT_MAX}")
        epoch = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, epoch, NO_PRODUCER_EPOCH,
                             self.timeout_ms, self.partitions, self.start_ms,
                             self.last_update_ms)  # fmt: skip

    def prepare_increment_producer_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | ErrorCode:
        """InitProducerId on an idle id: epoch + 1, or a KIP-360 retry answered without a bump."""
        if self.is_producer_epoch_exhausted:
            raise IllegalStateTransition(f"{self.transactional_id}: producer epochs exhausted")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:  # a retry of a bump that succeeded
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(S.EMPTY, self.producer_id, epoch, last, timeout_ms, (), -1, now_ms)

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        if self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise IllegalStateTransition(f"{self.transactional_id}: rotating ids with a transaction open")
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(S.EMPTY, new_producer_id, 0, last, timeout_ms, (), -1, now_ms)

    def prepare_add_partitions(
        self, added: Iterable[Partition], now_ms: int, client_transaction_version: int
    ) -> TxnTransit:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.start_ms
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions.union(added), start, now_ms,
                             tv=client_transaction_version)  # fmt: skip

    def prepare_abort_or_commit(
        self, new_state: TransactionState, client_transaction_version: int, next_producer_id: int,
        now_ms: int, bump: bool,
    ) -> TxnTransit:  # fmt: skip
        """Prepare*; `bump` (transactions V2, not a fence: KAFKA-19367) moves the epoch one up."""
        epoch, last = (self.producer_epoch + 1, self.producer_epoch) if bump else (
            self.producer_epoch, self.last_producer_epoch)  # fmt: skip
        return self._prepare(new_state, self.producer_id, epoch, last, self.timeout_ms, self.partitions,
                             self.start_ms, now_ms, next_producer_id=next_producer_id,
                             tv=client_transaction_version)  # fmt: skip

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Markers written: Complete*, and under V2 the rotated producer id (epoch 0) if one was drawn."""
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.is_v2 and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        return self._prepare(new_state, producer_id, epoch, self.producer_epoch, self.timeout_ms, (),
                             self.start_ms, now_ms, tv=self.client_transaction_version)  # fmt: skip

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, (), self.start_ms, self.last_update_ms)  # fmt: skip

    def _prepare(
        self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
        partitions: Iterable[Partition], start_ms: int, now_ms: int, *,
        next_producer_id: int = NO_PRODUCER_ID, tv: int = 0,
    ) -> TxnTransit:  # fmt: skip
        """prepareTransitionTo: check the table, set `pending`, return the target."""
        if self.pending is not None:
            raise IllegalStateTransition(
                f"{self.transactional_id}: to {state} while {self.pending} is pending"
            )
        if producer_id < 0 or (state is not S.DEAD and epoch < 0):
            raise IllegalStateTransition(f"{self.transactional_id}: producer {producer_id} epoch {epoch}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalStateTransition(f"{self.transactional_id}: {self.state} -> {state}")
        self.pending = state
        # Kafka's transit always names the current id as the previous one, but only an InitProducerId
        # (Empty) and a V2 completion take it over; the record says what the live state will be.
        takes_previous = state is S.EMPTY or (state in _COMPLETE and supports_epoch_bump(tv))
        previous = self.producer_id if takes_previous else self.previous_producer_id
        return TxnTransit(producer_id, previous, next_producer_id, epoch, last_epoch, timeout_ms,
                          state, frozenset(partitions), start_ms, now_ms, tv)  # fmt: skip

    # -- complete --------------------------------------------------------------------------------
    def complete_transition_to(self, t: TxnTransit) -> None:
        """The transit's record is durable: make it the live state (completeTransitionTo)."""
        if self.pending is not t.state or t.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise IllegalStateTransition(
                f"{self.transactional_id}: complete {t.state} pending {self.pending}"
            )
        match t.state:
            case S.EMPTY:
                self.timeout_ms, self.producer_epoch = t.timeout_ms, t.producer_epoch
                self.last_producer_epoch, self.producer_id = t.last_producer_epoch, t.producer_id
                self.previous_producer_id = t.previous_producer_id
                self.start_ms = -1
            case S.ONGOING:
                self.start_ms = t.start_ms
                self.partitions.update(t.partitions)
            case S.PREPARE_COMMIT | S.PREPARE_ABORT:
                self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
                self.next_producer_id = t.next_producer_id
            case S.COMPLETE_COMMIT | S.COMPLETE_ABORT:
                self.start_ms = t.start_ms
                self.partitions.clear()
                self.next_producer_id = t.next_producer_id
                if supports_epoch_bump(t.client_transaction_version):
                    self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
                    self.previous_producer_id, self.producer_id = t.previous_producer_id, t.producer_id
        self.client_transaction_version = t.client_transaction_version
        self.last_update_ms = t.last_update_ms
        self.pending = None
        self.state = t.state

    def transit_of_live(self) -> TxnTransit:
        """The live state as a transit (the record a replay of it gives); for views and tests."""
        return TxnTransit(self.producer_id, self.previous_producer_id, self.next_producer_id,
                          self.producer_epoch, self.last_producer_epoch, self.timeout_ms, self.state,
                          frozenset(self.partitions), self.start_ms, self.last_update_ms,
                          self.client_transaction_version)  # fmt: skip
