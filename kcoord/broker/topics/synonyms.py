"""Config synonyms and sources, built as Kafka's `ConfigHelper.configSynonyms` builds them.

A topic config's broker-level equivalents come from `ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS`
(the first one is the "primary"); a broker config's own chain from
`DynamicBrokerConfig.brokerConfigSynonyms` (`log.retention.ms|minutes|hours`, `log.roll.ms|hours`,
`log.roll.jitter.ms|hours`, `log.flush.interval.ms` + `log.flush.scheduler.interval.ms`). For a name,
Kafka collects every name of its chain that is set, the cluster-wide dynamic defaults first
(DYNAMIC_DEFAULT_BROKER_CONFIG), then the broker's own settings (STATIC_BROKER_CONFIG, in chain order),
then those with a Kafka default (DEFAULT_CONFIG; a default of null is not a value:
`ConfigDef.convertToStringMapWithPasswordValues` drops it), and finally drops everything that precedes
the described name. So `retention.ms` has no synonym on a broker whose settings are Kafka's defaults: its
primary `log.retention.ms` has no default (the 7 days come from `log.retention.hours`) and the drop
removes `log.retention.hours=168`. A topic's own value comes first (TOPIC_CONFIG), then these
(`ConfigHelper.createTopicConfigEntry`); the entry's source is the first synonym's, or DEFAULT_CONFIG.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

__all__ = [
    "BROKER_CHAINS",
    "BROKER_ONLY_DEFAULTS",
    "DYNAMIC_DEFAULTS",
    "NO_DEFAULT",
    "ConfigSource",
    "Synonym",
    "config_synonyms",
]


class ConfigSource(IntEnum):
    """DescribeConfigsResponse.ConfigSource."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


Synonym = tuple[str, str | None, ConfigSource]

LONG_MAX = (1 << 63) - 1

# Topic configs whose broker equivalents are more than one name (ServerTopicConfigSynonyms, in its
# order); every other topic config with a broker equivalent has just its `broker_synonym`.
BROKER_CHAINS: dict[str, tuple[str, ...]] = {
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
}

# Broker settings with no Kafka default (KafkaConfig defines them with null): never a DEFAULT_CONFIG
# synonym, described with a null value unless set.
NO_DEFAULT = frozenset(
    {
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
        "log.retention.ms",
        "log.retention.minutes",
    }
)

# The secondary names' Kafka defaults and types (ServerLogConfigs): (default, ConfigType id).
BROKER_ONLY_DEFAULTS: dict[str, tuple[str | None, int]] = {
    "log.roll.hours": ("168", 3),
    "log.roll.jitter.hours": ("0", 3),
    "log.flush.scheduler.interval.ms": (str(LONG_MAX), 5),
    "log.retention.minutes": (None, 3),
    "log.retention.hours": ("168", 3),
}


# The cluster-wide dynamic broker defaults a Kafka 4.3 cluster holds without anyone setting them: with
# eligible leader replicas on by default (KIP-966, `eligible.leader.replicas.version` 1), the controller
# writes a cluster-level `min.insync.replicas` (its own static value, 1 by default) when it activates
# (ConfigurationControlManager.maybeGenerateElrSafetyRecords), so every broker and topic reports it as
# DYNAMIC_DEFAULT_BROKER_CONFIG. kcoord has no dynamic configs; it reports the same (docs/compat.md).
DYNAMIC_DEFAULTS: dict[str, str] = {"min.insync.replicas": "1"}


def config_synonyms(
    name: str,
    chain: tuple[str, ...],
    static: Mapping[str, str],
    defaults: Mapping[str, str | None],
    dynamic_defaults: Mapping[str, str] = DYNAMIC_DEFAULTS,
) -> list[Synonym]:
    """ConfigHelper.configSynonyms for `name` (a broker config name) over its `chain` of names:
    `dynamic_defaults` the cluster-wide dynamic defaults, `static` the broker's own settings,
    `defaults` Kafka's defaults (None = no default)."""
    found: list[Synonym] = [
        (n, dynamic_defaults[n], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        for n in chain
        if n in dynamic_defaults
    ]
    found += [(n, static[n], ConfigSource.STATIC_BROKER_CONFIG) for n in chain if n in static]
    found += [
        (n, value, ConfigSource.DEFAULT_CONFIG) for n in chain if (value := defaults.get(n)) is not None
    ]
    # `dropWhile(s => s.name != name)`: a lower-priority name set before the described one is not its
    # synonym (e.g. log.retention.hours for log.retention.ms)
    while found and found[0][0] != name:
        found.pop(0)
    return found
