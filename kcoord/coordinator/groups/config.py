"""Configuration of the group logic."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "OFFSET_METADATA_MAX_BYTES", "GroupConfig"]

# Kafka's internal constant (GroupCoordinator / GroupMetadataManager): a new member's heartbeat
# deadline while its first JoinGroup is parked.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
# offset.metadata.max.bytes (Kafka default; measured in characters as the Java coordinator does).
OFFSET_METADATA_MAX_BYTES = 4096


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Broker settings the group logic mirrors; each defaults to Kafka's value."""

    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int | None = None  # None = unbounded (Kafka: Integer.MAX_VALUE)
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000  # offsets.retention.minutes = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    # -- the consumer protocol (KIP-848), Kafka's group.consumer.* settings and defaults
    # (GroupCoordinatorConfig); kcoord/wiring/config.py checks their bounds at start.
    consumer_heartbeat_interval_ms: int = 5000
    consumer_session_timeout_ms: int = 45_000
    consumer_max_size: int | None = None  # None = unbounded (Kafka: Integer.MAX_VALUE)
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    consumer_migration_policy: str = "bidirectional"  # group.consumer.migration.policy
    # -- share groups (KIP-932), Kafka's group.share.* settings and defaults (ShareGroupConfig)
    share_heartbeat_interval_ms: int = 5000
    share_session_timeout_ms: int = 45_000
    share_max_size: int = 200  # group.share.max.size: GROUP_MAX_SIZE_REACHED beyond it
    share_assignment_interval_ms: int = 1000  # group.share.assignment.interval.ms (Kafka 4.3)
