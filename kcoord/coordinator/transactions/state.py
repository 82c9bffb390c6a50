"""The transaction states (one enum) and their legal edges (one table).

Kafka: core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala (`TransactionState`
and its case objects; ids are what TransactionLogValue.TransactionStatus stores, names what
DescribeTransactions and ListTransactions show). `VALID_PREVIOUS` is each state's
`validPreviousStates`; `TransactionMetadata.prepare_transition` checks it and raises
`IllegalStateTransition` (a bug, never a client error).
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "EXPIRATION_ALLOWED",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "SHORT_MAX",
    "VALID_PREVIOUS",
    "IllegalStateTransition",
    "TransactionState",
    "is_epoch_exhausted",
    "supports_epoch_bump",
]

NO_PRODUCER_ID: Final = -1  # RecordBatch.NO_PRODUCER_ID
NO_PRODUCER_EPOCH: Final = -1  # RecordBatch.NO_PRODUCER_EPOCH
SHORT_MAX: Final = 32767


class IllegalStateTransition(RuntimeError):
    """A transition the table forbids: a bug in the coordinator, never a client error."""


class TransactionState(enum.Enum):
    """(id, name): the log's TransactionStatus and the name the admin APIs show."""

    EMPTY = (0, "Empty")
    """No transaction. InitProducerId bumps the epoch (stays Empty); AddPartitions -> ONGOING;
    EndTxn -> INVALID_TXN_STATE. Expirable once idle."""
    ONGOING = (1, "Ongoing")
    """Partitions added. AddPartitions adds more; EndTxn -> PREPARE_COMMIT / PREPARE_ABORT;
    InitProducerId or the timeout fences the epoch (pending PREPARE_EPOCH_FENCE) and aborts."""
    PREPARE_COMMIT = (2, "PrepareCommit")
    """Commit decided and durable; markers being written -> COMPLETE_COMMIT. Requests answer
    CONCURRENT_TRANSACTIONS (an EndTxn of the other kind INVALID_TXN_STATE)."""
    PREPARE_ABORT = (3, "PrepareAbort")
    """As PREPARE_COMMIT, for an abort -> COMPLETE_ABORT."""
    COMPLETE_COMMIT = (4, "CompleteCommit")
    """Markers written. A retried commit answers NONE; AddPartitions starts the next transaction."""
    COMPLETE_ABORT = (5, "CompleteAbort")
    """As COMPLETE_COMMIT, for an abort."""
    DEAD = (6, "Dead")
    """Being expired (pending only): its tombstone is in flight."""
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")
    """Fencing the producer before aborting (pending only): never written, never completed."""

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state in cls:
            if state.value[0] == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


_BY_NAME: Final = {s.state_name: s for s in TransactionState}

S = TransactionState
VALID_PREVIOUS: Final[dict[TransactionState, frozenset[TransactionState]]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
# TransactionState.isExpirationAllowed
EXPIRATION_ALLOWED: Final = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: Short.MaxValue stays free so a fence always fits."""
    return producer_epoch >= SHORT_MAX - 1


def supports_epoch_bump(transaction_version: int) -> bool:
    """TransactionVersion.supportsEpochBump: transaction.version 2 (KIP-890 part 2)."""
    return transaction_version >= 2
