"""The transaction coordinator's log record: Kafka's TransactionLogKey / TransactionLogValue
(`__transaction_state`), storage record type 6 (`protocol.messages.records.RECORD_TYPES`).

`coordinator.persistence.txn_codec` maps it to bytes; a None value is the tombstone an expired
transactional id gets (TransactionStateManager.removeExpiredTransactionalIds).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcoord.coordinator.transactions.state import TransactionState

__all__ = ["TransactionRecord", "TransactionValue"]


@dataclass(frozen=True, slots=True)
class TransactionValue:
    """TransactionLogValue's fields (the partitions sorted; none in the Empty state)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_ms: int
    client_transaction_version: int


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    transactional_id: str
    value: TransactionValue | None  # None: the tombstone of an expired id
