"""Typed answers of the transaction coordinator, one per API, final for the request's version
(Kafka's KafkaApis downgrades applied), so a handler only copies fields into the response."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kcoord.coordinator.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kcoord.protocol.errors import ErrorCode

__all__ = [
    "ControlResult",
    "EndTxnResult",
    "InitProducerIdResult",
    "ListTransactionsResult",
    "PartitionErrors",
    "TransactionDescription",
    "TransactionListing",
    "TransactionStats",
    "downgrade_fenced",
]

PartitionErrors = Mapping[tuple[str, int], ErrorCode]


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndTxnResult:
    """EndTxn v5 carries producer_id/producer_epoch (V2: the ones for the next transaction)."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    transaction_state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResult:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transaction_states: tuple[TransactionListing, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """DescribeTransactions v0, one transactional id; `topics` as (topic, partitions) pairs."""

    transactional_id: str
    error: ErrorCode
    transaction_state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    topics: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ControlResult:
    """The answer of an operator / test control (abort, expire): NONE or why not."""

    error: ErrorCode
    message: str = ""


@dataclass(frozen=True, slots=True)
class TransactionStats:
    """For /metrics: transactions open now, the oldest one's start, and those completed since start."""

    open: int
    oldest_open_start_ms: int | None
    commits: int
    aborts: int


def downgrade_fenced(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below the version that knows it (KafkaApis:
    InitProducerId < 4, EndTxn / AddPartitionsToTxn / AddOffsetsToTxn < 2)."""
    if error is ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


OnInit = Callable[[InitProducerIdResult], None]
OnEnd = Callable[[EndTxnResult], None]
OnError = Callable[[ErrorCode], None]
OnPartitions = Callable[[PartitionErrors], None]
OnControl = Callable[[ControlResult], None]
