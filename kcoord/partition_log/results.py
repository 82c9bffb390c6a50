"""What appends and reads of a partition log answer."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "AppendResult", "NotLeader", "OutcomeUnknown", "ReadResult"]

READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Fetch's and ListOffsets' isolation_level


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: bytes
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    # READ_COMMITTED: (producer id, first offset) of the aborted transactions in the range read;
    # None for READ_UNCOMMITTED (Kafka answers null there).
    aborted_transactions: list[tuple[int, int]] | None = None


class NotLeader(Exception):
    """An append failed because this node no longer leads the partition (cluster mode: another node's
    lease fenced it). Produce answers NOT_LEADER_OR_FOLLOWER, so the client refreshes its metadata
    and follows the partition to its new leader (Kafka's NotLeaderOrFollowerException)."""


class OutcomeUnknown(Exception):
    """An append whose write may have been made durable or not, and nobody could tell in time (cluster
    mode: the call to PostgreSQL broke and the partition was not reloaded to read the verdict). Produce
    answers REQUEST_TIMED_OUT, as Kafka does when an acks=all wait expires (`DelayedProduce.onExpiration`):
    clients count it as possibly persisted, never as refused."""
