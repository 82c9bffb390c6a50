"""Configuration of the transaction coordinator: Kafka's broker settings and defaults
(TransactionStateManagerConfig, TransactionLogConfig, the `transaction.version` feature)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TransactionConfig"]


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    transaction_max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms (7 days)
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    """transaction.abort.timed.out.transaction.cleanup.interval.ms"""
    remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    """transaction.remove.expired.transaction.cleanup.interval.ms"""
    transaction_version: int = 2
    """The finalized `transaction.version` feature level (0..2): the server's own version for the
    aborts it starts (timeouts, fences), and what ApiVersions advertises; 2 = KIP-890 part 2."""
    marker_retry_backoff_ms: int = 100
    """How long a failed marker write or Complete record waits before it is retried (Kafka's marker
    channel retries on its next send loop, its retry queue on the next append attempt)."""
    coordinator_epoch: int = 0
    """The epoch markers carry (Kafka: the `__transaction_state` partition's leader epoch)."""
    transaction_state_partitions: int = 50  # transaction.state.log.num.partitions (partition_for)

    def __post_init__(self) -> None:
        if not 0 <= self.transaction_version <= 2:
            raise ValueError(f"transaction.version must be 0..2, not {self.transaction_version}")
