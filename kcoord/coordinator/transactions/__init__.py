"""The transaction coordinator (Kafka's TransactionCoordinator), pure: a tenant of the shared
coordinator runtime (`coordinator.runtime`) beside `coordinator.groups`."""

from kcoord.coordinator.transactions.config import TransactionConfig
from kcoord.coordinator.transactions.coordinator import TransactionCoordinator
from kcoord.coordinator.transactions.partitioning import offsets_partition_for
from kcoord.coordinator.transactions.ports import MarkerWriter, ProducerIdAllocator, TransactionLog
from kcoord.coordinator.transactions.records import TransactionRecord, TransactionValue
from kcoord.coordinator.transactions.results import (
    ControlResult,
    EndTxnResult,
    InitProducerIdResult,
    ListTransactionsResult,
    TransactionDescription,
    TransactionListing,
)
from kcoord.coordinator.transactions.state import TransactionState

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
