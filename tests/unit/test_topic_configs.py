"""Topic configs: Kafka's names, value checks and messages, and what the partition log takes from them."""

from __future__ import annotations

import pytest

from kcoord.broker.topics.configs import (
    TOPIC_CONFIGS,
    ConfigSource,
    InvalidConfig,
    describe_topic,
    partition_config,
    validate_topic_configs,
)
from kcoord.partition_log import PartitionConfig


def test_defaults_are_kafkas_and_match_the_partition_log_defaults() -> None:
    assert partition_config({}) == PartitionConfig()
    assert TOPIC_CONFIGS["retention.ms"].default == "604800000"
    assert TOPIC_CONFIGS["max.message.bytes"].default == "1048588"


def test_honoured_configs_reach_the_partition_log() -> None:
    config = partition_config(
        validate_topic_configs(
            {
                "retention.ms": "60000",
                "retention.bytes": "1048576",
                "segment.bytes": "2097152",
                "segment.ms": "1000",
                "max.message.bytes": "2000",
                "message.timestamp.type": "LogAppendTime",
            }
        )
    )
    assert (config.retention_ms, config.retention_bytes) == (60_000, 1_048_576)
    assert (config.segment_bytes, config.segment_ms) == (2_097_152, 1000)
    assert config.max_message_bytes == 2000
    assert config.message_timestamp_type == "LogAppendTime"


def test_compact_only_topics_are_not_trimmed_by_retention() -> None:
    config = partition_config({"cleanup.policy": "compact", "retention.ms": "1000"})
    assert config.retention_ms == -1 and config.retention_bytes == -1
    assert partition_config({"cleanup.policy": "compact,delete", "retention.ms": "1000"}).retention_ms == 1000


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
        (
            {"retention.ms": "soon"},
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        ({"segment.bytes": "1000"}, "Value must be at least 1048576"),
        ({"segment.bytes": str(1 << 31)}, "Not a number of type INT"),
        ({"message.timestamp.type": "Now"}, "String must be one of: CreateTime, LogAppendTime"),
        ({"cleanup.policy": "compact,shred"}, "String must be one of: compact, delete"),
        ({"preallocate": "maybe"}, "Expected value to be either true or false"),
        (
            {"compression.type": "none"},
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
    ],
)
def test_bad_names_and_values_get_kafkas_message(configs: dict[str, str | None], message: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs(configs)
    assert message in str(info.value)


def test_inert_configs_are_accepted_and_described() -> None:
    stored = validate_topic_configs(
        {"min.compaction.lag.ms": "100", "unclean.leader.election.enable": "true"}
    )
    entries = {e.name: e for e in describe_topic(stored)}
    assert entries["min.compaction.lag.ms"].value == "100"
    assert entries["min.compaction.lag.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["retention.ms"].source is ConfigSource.DEFAULT_CONFIG
    # ConfigHelper.configSynonyms: log.retention.ms has no default and log.retention.hours is dropped
    assert entries["retention.ms"].synonyms() == []
    assert set(entries) == set(TOPIC_CONFIGS)
    assert [e.name for e in describe_topic(stored, ["retention.ms", "nope"])] == ["retention.ms"]
