"""JSON views of transactions for the HTTP inspector (`/v1/transactions`, `/v1/transactions/{id}`), and
what the transaction test controls' answers mean in HTTP.

Read-only, like group_views.py: they read the transaction coordinator's live metadata between two
loop turns. The fields are those of DescribeTransactions (Kafka's `TransactionCoordinator.
handleDescribeTransactions`, what `kafka-transactions.sh describe` prints) in the inspector's
snake_case, plus what only the coordinator knows: the transition in flight, the last update, and the
age of an open transaction. One transaction's view adds, per partition of the transaction, where the
partition log stands: its high watermark, last stable offset, and the first offset of this producer's
open transaction there (DescribeProducers' `current_txn_start_offset`).
"""

from __future__ import annotations

from typing import Any

from kcoord.coordinator.transactions import ControlResult, TransactionCoordinator, TransactionState
from kcoord.coordinator.transactions.metadata import TransactionMetadata
from kcoord.partition_log.port import PartitionStores
from kcoord.protocol.errors import ErrorCode

__all__ = [
    "CONTROL_STATUS",
    "LIVE_STATES",
    "OPEN_STATES",
    "all_transactions",
    "control_status",
    "parse_states",
    "transaction_detail",
    "transaction_summary",
]

S = TransactionState
# Open: the transaction holds its partitions' last stable offset back (Ongoing, or decided and its
# markers not all written yet): TransactionCoordinator.stats() counts the same states.
OPEN_STATES = frozenset({S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT})
# States a live transactional id can be in: Dead and PrepareEpochFence are only ever pending.
LIVE_STATES: tuple[TransactionState, ...] = tuple(s for s in S if s not in (S.DEAD, S.PREPARE_EPOCH_FENCE))

# A control's ControlResult error -> the HTTP status the endpoint answers (docs/testing.md: "Test controls").
CONTROL_STATUS: dict[ErrorCode, int] = {
    ErrorCode.NONE: 200,
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: 404,
    ErrorCode.INVALID_TXN_STATE: 409,  # abort: not Ongoing; expire: not Empty / Complete*
    ErrorCode.CONCURRENT_TRANSACTIONS: 409,  # a transition is in flight: retry
    ErrorCode.NOT_COORDINATOR: 503,  # the record could not be written (storage refused it)
    ErrorCode.COORDINATOR_NOT_AVAILABLE: 503,  # shutting down
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: 503,
}


def control_status(result: ControlResult) -> int:
    """Anything else the abort's EndTxn path could answer is a coordinator fault: 500."""
    return CONTROL_STATUS.get(result.error, 500)


def parse_states(names: list[str]) -> frozenset[TransactionState] | str:
    """`?state=Ongoing&state=PrepareCommit` (Kafka's state names), or the message for a bad one."""
    states = set()
    for name in names:
        state = TransactionState.from_name(name)
        if state is None or state not in LIVE_STATES:
            return f"unknown state {name!r}: one of {[s.state_name for s in LIVE_STATES]}"
        states.add(state)
    return frozenset(states)


def all_transactions(
    tc: TransactionCoordinator, states: frozenset[TransactionState] = frozenset()
) -> list[TransactionMetadata]:
    """Every live transactional id (in `states`, when given), by id."""
    found = [md for md in tc.transactions() if not states or md.state in states]
    return sorted(found, key=lambda md: md.transactional_id)


def transaction_summary(tc: TransactionCoordinator, md: TransactionMetadata, now_ms: int) -> dict[str, Any]:
    started = md.start_ms if md.start_ms >= 0 else None
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(md.partitions):
        topics.setdefault(topic, []).append(partition)
    return {
        "transactional_id": md.transactional_id,
        "state": md.state.state_name,
        "pending_state": None if md.pending is None else md.pending.state_name,
        "producer_id": md.producer_id,
        "producer_epoch": md.producer_epoch,
        "transaction_timeout_ms": md.timeout_ms,
        "transaction_start_time_ms": started,
        # how long the open transaction has run (what a timeout or a hanging-transaction check compares)
        "age_ms": max(now_ms - md.start_ms, 0) if md.state in OPEN_STATES and started is not None else None,
        "last_update_time_ms": md.last_update_ms if md.last_update_ms >= 0 else None,
        "client_transaction_version": md.client_transaction_version,
        "transaction_state_partition": tc.partition_for(md.transactional_id),
        "partitions": topics,
    }


def transaction_detail(
    tc: TransactionCoordinator, logs: PartitionStores, md: TransactionMetadata, now_ms: int
) -> dict[str, Any]:
    return {
        **transaction_summary(tc, md, now_ms),
        "partition_logs": [_partition_log(logs, md.producer_id, t, p) for t, p in sorted(md.partitions)],
    }


def _partition_log(logs: PartitionStores, producer_id: int, topic: str, partition: int) -> dict[str, Any]:
    """A partition of the transaction as its log stands; nulls for one without a log here (the
    `__consumer_offsets` partition AddOffsetsToTxn adds is the group coordinator's)."""
    log = logs.get(topic, partition)
    if log is None:
        return {"topic": topic, "partition": partition, "high_watermark": None, "last_stable_offset": None,
                "lso_lag": None, "txn_start_offset": None}  # fmt: skip
    started = next(
        (r.current_txn_start_offset for r in log.producer_states() if r.producer_id == producer_id), -1
    )
    stable = log.last_stable_offset
    return {
        "topic": topic,
        "partition": partition,
        "high_watermark": log.high_watermark,
        "last_stable_offset": stable,
        "lso_lag": log.high_watermark - stable,
        # where this producer's open transaction begins on the partition; null before its first record
        "txn_start_offset": started if started >= 0 else None,
    }
