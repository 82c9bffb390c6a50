"""Synonyms and sources of every topic config and broker setting, against Kafka's rules written out by
hand (ServerTopicConfigSynonyms, DynamicBrokerConfig.brokerConfigSynonyms, ConfigHelper.configSynonyms):
the expected table is independent of the code's own tables."""

from __future__ import annotations

import pytest

from kcoord.broker.topics.configs import TOPIC_CONFIGS, ConfigSource, describe_topic
from kcoord.broker.topics.synonyms import config_synonyms

DEFAULT, STATIC, TOPIC = ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG, 1
DYNAMIC_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
# Set cluster-wide on every Kafka 4.3 cluster by its controller (KIP-966: eligible leader replicas on by
# default; ConfigurationControlManager.maybeGenerateElrSafetyRecords), listed before the defaults.
CLUSTER_DYNAMIC_DEFAULTS = {"min.insync.replicas": ("min.insync.replicas", "1")}
LONG_MAX = str((1 << 63) - 1)

# Topic config -> its DEFAULT_CONFIG synonym on a broker at Kafka's defaults (None: Kafka lists none).
KAFKA_DEFAULT_SYNONYM: dict[str, tuple[str, str] | None] = {
    "cleanup.policy": ("log.cleanup.policy", "delete"),
    "compression.type": ("compression.type", "producer"),
    "compression.gzip.level": ("compression.gzip.level", "-1"),
    "compression.lz4.level": ("compression.lz4.level", "9"),
    "compression.zstd.level": ("compression.zstd.level", "3"),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", "86400000"),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", "60000"),
    "flush.messages": ("log.flush.interval.messages", LONG_MAX),
    "flush.ms": None,  # log.flush.interval.ms: no default (log.flush.scheduler.interval.ms dropped)
    "follower.replication.throttled.replicas": None,  # no broker equivalent
    "index.interval.bytes": ("log.index.interval.bytes", "4096"),
    "leader.replication.throttled.replicas": None,
    "local.retention.bytes": ("log.local.retention.bytes", "-2"),
    "local.retention.ms": ("log.local.retention.ms", "-2"),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", LONG_MAX),
    "max.message.bytes": ("message.max.bytes", "1048588"),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms", "3600000"),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms", LONG_MAX),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime"),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", "0.5"),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", "0"),
    "min.insync.replicas": ("min.insync.replicas", "1"),
    "preallocate": ("log.preallocate", "false"),
    "remote.log.copy.disable": None,
    "remote.log.delete.on.disable": None,
    "remote.storage.enable": None,
    "retention.bytes": ("log.retention.bytes", "-1"),
    "retention.ms": None,  # log.retention.ms: no default; log.retention.hours=168 precedes nothing
    "segment.bytes": ("log.segment.bytes", "1073741824"),
    "segment.index.bytes": ("log.index.size.max.bytes", "10485760"),
    "segment.jitter.ms": None,  # log.roll.jitter.ms: no default
    "segment.ms": None,  # log.roll.ms: no default
    "unclean.leader.election.enable": ("unclean.leader.election.enable", "false"),
}


def test_the_table_covers_every_topic_config() -> None:
    assert set(KAFKA_DEFAULT_SYNONYM) == set(TOPIC_CONFIGS)


def _broker_synonyms(name: str) -> list[tuple[str, str, ConfigSource]]:
    dynamic = CLUSTER_DYNAMIC_DEFAULTS.get(name)
    expected = KAFKA_DEFAULT_SYNONYM[name]
    return ([] if dynamic is None else [(*dynamic, DYNAMIC_DEFAULT)]) + (
        [] if expected is None else [(*expected, DEFAULT)]
    )


@pytest.mark.parametrize("name", sorted(KAFKA_DEFAULT_SYNONYM))
def test_a_default_topic_config_has_kafkas_synonyms_and_source(name: str) -> None:
    (entry,) = describe_topic({}, [name])
    assert entry.synonyms() == _broker_synonyms(name)
    assert entry.source is (DYNAMIC_DEFAULT if name in CLUSTER_DYNAMIC_DEFAULTS else DEFAULT)
    assert entry.value == TOPIC_CONFIGS[name].default


@pytest.mark.parametrize("name", sorted(KAFKA_DEFAULT_SYNONYM))
def test_a_topics_own_value_comes_first(name: str) -> None:
    value = TOPIC_CONFIGS[name].default
    (entry,) = describe_topic({name: value}, [name])
    assert entry.synonyms() == [(name, value, TOPIC), *_broker_synonyms(name)]
    assert entry.source == TOPIC


def test_a_broker_setting_precedes_kafkas_default() -> None:
    (entry,) = describe_topic({}, ["compression.type"], {"compression.type": "zstd"})
    assert entry.synonyms() == [
        ("compression.type", "zstd", STATIC),
        ("compression.type", "producer", DEFAULT),
    ]
    assert (entry.value, entry.source) == ("zstd", STATIC)


RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
KAFKA_DEFAULTS = {"log.retention.hours": "168"}


@pytest.mark.parametrize(
    ("name", "static", "expected"),
    [
        # the described name's own default, and nothing of a lower-priority name before it
        ("log.retention.hours", {}, [("log.retention.hours", "168", DEFAULT)]),
        ("log.retention.ms", {}, []),
        ("log.retention.minutes", {}, []),
        # a set higher-priority name is listed, then the lower ones from the described one on
        (
            "log.retention.ms",
            {"log.retention.ms": "1000", "log.retention.hours": "2"},
            [
                ("log.retention.ms", "1000", STATIC),
                ("log.retention.hours", "2", STATIC),
                ("log.retention.hours", "168", DEFAULT),
            ],
        ),
        # a lower-priority name set alone is dropped when the primary is described
        ("log.retention.ms", {"log.retention.hours": "2"}, []),
        (
            "log.retention.hours",
            {"log.retention.ms": "1000", "log.retention.hours": "2"},
            [("log.retention.hours", "2", STATIC), ("log.retention.hours", "168", DEFAULT)],
        ),
    ],
)
def test_config_synonyms_drop_what_precedes_the_name(
    name: str, static: dict[str, str], expected: list[tuple[str, str, ConfigSource]]
) -> None:
    assert config_synonyms(name, RETENTION, static, KAFKA_DEFAULTS) == expected
