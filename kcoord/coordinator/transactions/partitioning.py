"""Which internal partition a key maps to, as Kafka computes it: `Utils.abs(key.hashCode) % n` with
Java's String.hashCode over UTF-16 code units (TransactionStateManager.partitionFor for
`__transaction_state`, GroupCoordinator.partitionFor for `__consumer_offsets`)."""

from __future__ import annotations

__all__ = ["OFFSETS_TOPIC", "java_string_hash", "offsets_partition_for", "partition_for"]

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions


def java_string_hash(text: str) -> int:
    """String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _abs(n: int) -> int:
    """Utils.abs (clients/.../common/utils/Utils.java): `(n == Integer.MIN_VALUE) ? 0 : Math.abs(n)`.
    Not `n & 0x7fffffff` (that is `Utils.toPositive`, the producer's partitioner): for a negative hash
    the two differ, and AddOffsetsToTxn then named another `__consumer_offsets` partition than the
    group's shard (`runtime.shards.shard_of`), so a cluster sent the group's markers to another node."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    return _abs(java_string_hash(key)) % partitions


def offsets_partition_for(group_id: str) -> tuple[str, int]:
    """The `__consumer_offsets` partition AddOffsetsToTxn adds for a group."""
    return OFFSETS_TOPIC, partition_for(group_id, OFFSETS_TOPIC_PARTITIONS)
