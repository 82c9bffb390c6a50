"""A partition log's settings: Kafka's topic configs (`TopicConfig` / `LogConfig`) with Kafka 4's defaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PartitionConfig"]

LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    segment_bytes: int = 1_073_741_824  # segment.bytes
    segment_ms: int = 604_800_000  # segment.ms (7 days)
    retention_ms: int = 604_800_000  # retention.ms (7 days); -1 = unlimited
    retention_bytes: int = -1  # retention.bytes; -1 = unlimited
    max_message_bytes: int = 1_048_588  # max.message.bytes (1 MiB + record batch overhead)
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type: CreateTime | LogAppendTime
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms (KIP-937)
    message_timestamp_after_max_ms: int = 3_600_000  # message.timestamp.after.max.ms (1 hour since 4.0)
    index_interval_bytes: int = 4096  # index.interval.bytes
    # compression.type: producer (batches kept as compressed) | uncompressed | gzip | snappy | lz4 | zstd
    compression_type: str = "producer"
    compression_gzip_level: int = -1  # compression.gzip.level (KIP-390): -1 = zlib's default
    compression_lz4_level: int = 9  # compression.lz4.level
    compression_zstd_level: int = 3  # compression.zstd.level
