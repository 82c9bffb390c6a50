"""The transaction coordinator (Kafka's TransactionCoordinator), pure: a tenant of the shared
coordinator runtime (`coordinator.runtime`) beside `coordinator.groups`."""

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.partitioning import offsets_partition_for
from coordinator.transactions.ports import MarkerWriter, ProducerIdAllocator, TransactionLog
from coordinator.transactions.records import TransactionRecord, TransactionValue
from coordinator.transactions.results import (
    ControlResult,
    EndTxnResult,
    InitProducerIdResult,
    ListTransactionsResult,
    TransactionDescription,
    TransactionListing,
)
from coordinator.transactions.state import TransactionState

__all__ = [
    "ControlResult",
    "EndTxnResult",
    "InitProducerIdResult",
    "ListTransactionsResult",
    "MarkerWriter",
    "ProducerIdAllocator",
    "TransactionConfig",
    "TransactionCoordinator",
    "TransactionDescription",
    "TransactionListing",
    "TransactionLog",
    "TransactionRecord",
    "TransactionState",
    "TransactionValue",
    "offsets_partition_for",
]
