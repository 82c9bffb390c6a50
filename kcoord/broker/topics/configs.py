"""Topic configs: Kafka's names, types and defaults, which of them kcoord acts on, and validation.

Three kinds of Kafka topic config (`org.apache.kafka.common.config.TopicConfig`, defaults from
`LogConfig` / `ServerLogConfigs` of Kafka 4):

- *honoured*: kcoord's partition logs act on them (segment, retention, size and timestamp limits,
  `min.insync.replicas` against the one replica, `cleanup.policy`'s `delete`);
- *inert*: meaningful only for replication, the log cleaner, remote storage or flush tuning, which a
  single node without those parts does not have; accepted, stored and described, with no effect
  (docs/compat.md);
- refused: an unknown name (`Unknown topic config name: x`, as Kafka's `LogConfig.validateNames`), or
  a value kcoord cannot honour (`remote.storage.enable=true`).

`compression.type` and its KIP-390 levels are honoured: a batch in another codec is rebuilt in the
topic's (`kcoord/partition_log/recompression.py`). They are the topic configs whose broker-level default
`kcoord serve` sets (`--compression-type`, `--compression-gzip-level`, ...): `broker` below maps a topic
config's name to the broker's setting where it differs from Kafka's default, and a topic without its own
value takes it (source STATIC_BROKER_CONFIG, as Kafka's `LogConfig` falls back on `KafkaConfig`).

Values are validated the way Kafka's `ConfigDef` parses them (type, then range), with its message:
`Invalid value X for configuration Y: reason`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from kcoord.broker.topics.synonyms import (
    BROKER_CHAINS,
    BROKER_ONLY_DEFAULTS,
    NO_DEFAULT,
    ConfigSource,
    Synonym,
    config_synonyms,
)
from kcoord.partition_log import PartitionConfig

__all__ = [
    "BROKER_DEFAULTED",
    "BROKER_DEFAULTS",
    "TOPIC_CONFIGS",
    "ConfigEntry",
    "ConfigSource",
    "ConfigType",
    "InvalidConfig",
    "TopicConfigDef",
    "broker_settings",
    "describe_topic",
    "effective",
    "partition_config",
    "topic_synonyms",
    "validate_topic_configs",
]

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


class ConfigType(IntEnum):
    """DescribeConfigsResponse.ConfigType."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class InvalidConfig(ValueError):
    """A config name or value Kafka (or kcoord) refuses; the message is the client-facing one."""


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: str
    honoured: bool
    broker_synonym: str | None = None  # the broker-level default's name (DescribeConfigs synonyms)
    at_least: int | float | None = None
    at_most: int | None = None
    choices: tuple[str, ...] = ()
    documentation: str = ""


_T = ConfigType
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef(
            "cleanup.policy",
            _T.LIST,
            "delete",
            True,
            "log.cleanup.policy",
            choices=("compact", "delete"),
            documentation="delete: retention removes old segments; compact alone: kept (no cleaner)",
        ),
        TopicConfigDef(
            "compression.type",
            _T.STRING,
            "producer",
            True,
            "compression.type",
            # BrokerCompressionType, in its order (ConfigDef.ValidString's message lists them so)
            choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
            documentation="producer keeps the producer's codec; another value recompresses to it",
        ),
        # KIP-390 levels: GzipCompression.LevelValidator ([1,...,9] or -1), Lz4Compression and
        # ZstdCompression's ConfigDef.Range (zstd's bounds are ZSTD_minCLevel / ZSTD_maxCLevel).
        TopicConfigDef("compression.gzip.level", _T.INT, "-1", True, "compression.gzip.level"),
        TopicConfigDef(
            "compression.lz4.level", _T.INT, "9", True, "compression.lz4.level", at_least=1, at_most=17
        ),
        TopicConfigDef(
            "compression.zstd.level",
            _T.INT,
            "3",
            True,
            "compression.zstd.level",
            at_least=-131072,
            at_most=22,
        ),
        TopicConfigDef(
            "delete.retention.ms", _T.LONG, "86400000", False, "log.cleaner.delete.retention.ms", at_least=0
        ),
        TopicConfigDef(
            "file.delete.delay.ms", _T.LONG, "60000", False, "log.segment.delete.delay.ms", at_least=0
        ),
        TopicConfigDef(
            "flush.messages", _T.LONG, str(LONG_MAX), False, "log.flush.interval.messages", at_least=1
        ),
        TopicConfigDef("flush.ms", _T.LONG, str(LONG_MAX), False, "log.flush.interval.ms", at_least=0),
        TopicConfigDef("follower.replication.throttled.replicas", _T.LIST, "", False),
        TopicConfigDef("index.interval.bytes", _T.INT, "4096", True, "log.index.interval.bytes", at_least=0),
        TopicConfigDef("leader.replication.throttled.replicas", _T.LIST, "", False),
        TopicConfigDef(
            "local.retention.bytes", _T.LONG, "-2", False, "log.local.retention.bytes", at_least=-2
        ),
        TopicConfigDef("local.retention.ms", _T.LONG, "-2", False, "log.local.retention.ms", at_least=-2),
        TopicConfigDef(
            "max.compaction.lag.ms",
            _T.LONG,
            str(LONG_MAX),
            False,
            "log.cleaner.max.compaction.lag.ms",
            at_least=1,
        ),
        TopicConfigDef("max.message.bytes", _T.INT, "1048588", True, "message.max.bytes", at_least=0),
        TopicConfigDef(
            "message.timestamp.after.max.ms",
            _T.LONG,
            "3600000",
            True,
            "log.message.timestamp.after.max.ms",
            at_least=0,
        ),
        TopicConfigDef(
            "message.timestamp.before.max.ms",
            _T.LONG,
            str(LONG_MAX),
            True,
            "log.message.timestamp.before.max.ms",
            at_least=0,
        ),
        TopicConfigDef(
            "message.timestamp.type",
            _T.STRING,
            "CreateTime",
            True,
            "log.message.timestamp.type",
            choices=("CreateTime", "LogAppendTime"),
        ),
        TopicConfigDef(
            "min.cleanable.dirty.ratio",
            _T.DOUBLE,
            "0.5",
            False,
            "log.cleaner.min.cleanable.ratio",
            at_least=0,
        ),
        TopicConfigDef(
            "min.compaction.lag.ms", _T.LONG, "0", False, "log.cleaner.min.compaction.lag.ms", at_least=0
        ),
        TopicConfigDef("min.insync.replicas", _T.INT, "1", True, "min.insync.replicas", at_least=1),
        TopicConfigDef("preallocate", _T.BOOLEAN, "false", False, "log.preallocate"),
        TopicConfigDef("remote.log.copy.disable", _T.BOOLEAN, "false", False),
        TopicConfigDef("remote.log.delete.on.disable", _T.BOOLEAN, "false", False),
        TopicConfigDef(
            "remote.storage.enable",
            _T.BOOLEAN,
            "false",
            True,
            choices=("false",),
            documentation="kcoord has no remote storage",
        ),
        TopicConfigDef("retention.bytes", _T.LONG, "-1", True, "log.retention.bytes"),
        TopicConfigDef("retention.ms", _T.LONG, "604800000", True, "log.retention.ms", at_least=-1),
        TopicConfigDef(
            "segment.bytes", _T.INT, "1073741824", True, "log.segment.bytes", at_least=1024 * 1024
        ),
        TopicConfigDef(
            "segment.index.bytes", _T.INT, "10485760", False, "log.index.size.max.bytes", at_least=4
        ),
        TopicConfigDef("segment.jitter.ms", _T.LONG, "0", False, "log.roll.jitter.ms", at_least=0),
        TopicConfigDef("segment.ms", _T.LONG, "604800000", True, "log.roll.ms", at_least=1),
        TopicConfigDef(
            "unclean.leader.election.enable", _T.BOOLEAN, "false", False, "unclean.leader.election.enable"
        ),
    )
}


def _parse(definition: TopicConfigDef, value: str | None) -> object:
    """The typed value (ConfigDef.parseType then its validator); InvalidConfig with Kafka's message."""
    if value is None:
        raise InvalidConfig(f"Null value not supported for topic configs: {definition.name}")
    parsed = _parse_type(definition, value.strip())
    if definition.at_least is not None and isinstance(parsed, int | float) and parsed < definition.at_least:
        raise _invalid(definition, value, f"Value must be at least {definition.at_least}")
    if definition.at_most is not None and isinstance(parsed, int) and parsed > definition.at_most:
        raise _invalid(definition, value, f"Value must be no more than {definition.at_most}")
    if definition.name == "compression.gzip.level" and isinstance(parsed, int) and not _gzip_level(parsed):
        raise _invalid(definition, value, "Value must be between 1 and 9 or equal to -1")
    if (
        definition.choices
        and definition.type is not ConfigType.LIST
        and str(parsed) not in definition.choices
    ):
        raise _invalid(definition, value, _NOT_SUPPORTED.get(definition.name, _one_of(definition)))
    return parsed


_NOT_SUPPORTED = {"remote.storage.enable": "kcoord has no tiered storage"}


def _gzip_level(level: int) -> bool:
    """GzipCompression.LevelValidator: Deflater's levels 1-9, or -1 (DEFAULT_COMPRESSION)."""
    return 1 <= level <= 9 or level == -1


def _one_of(definition: TopicConfigDef) -> str:
    return f"String must be one of: {', '.join(definition.choices)}"


def _invalid(definition: TopicConfigDef, value: str, reason: str) -> InvalidConfig:
    return InvalidConfig(f"Invalid value {value} for configuration {definition.name}: {reason}")


def _parse_type(definition: TopicConfigDef, text: str) -> object:
    match definition.type:
        case ConfigType.INT | ConfigType.LONG:
            try:
                number = int(text)
            except ValueError:
                number = None
            limit = INT_MAX if definition.type is ConfigType.INT else LONG_MAX
            if number is None or not -limit - 1 <= number <= limit:
                raise _invalid(definition, text, f"Not a number of type {definition.type.name}")
            return number
        case ConfigType.DOUBLE:
            try:
                return float(text)
            except ValueError:
                raise _invalid(definition, text, "Not a number of type DOUBLE") from None
        case ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise _invalid(definition, text, "Expected value to be either true or false")
            return text.lower()
        case ConfigType.LIST:
            items = [item.strip() for item in text.split(",") if item.strip()]
            if definition.choices and any(item not in definition.choices for item in items):
                raise _invalid(definition, text, _one_of(definition))
            return items
    return text


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """The configs to store (names checked, values validated and kept as given); raises InvalidConfig."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfig(f"Unknown topic config name: {name}")
    stored: dict[str, str] = {}
    for name, value in configs.items():
        _parse(TOPIC_CONFIGS[name], value)
        stored[name] = str(value).strip()
    return stored


# The topic configs a broker setting defaults (KafkaConfig's compression.type and KIP-390 levels).
BROKER_DEFAULTED = (
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
)
_NO_BROKER: Mapping[str, str] = {}


def effective(configs: Mapping[str, str], name: str, broker: Mapping[str, str] = _NO_BROKER) -> str:
    """The topic's value of `name`: its own setting, else the broker's, else Kafka's default."""
    value = configs.get(name, broker.get(name))
    return TOPIC_CONFIGS[name].default if value is None else value


def partition_config(configs: Mapping[str, str], broker: Mapping[str, str] = _NO_BROKER) -> PartitionConfig:
    """What the partition log acts on, from a topic's stored (already validated) configs and the
    broker's defaults for them."""

    def number(name: str) -> int:
        return int(effective(configs, name, broker))

    policies = [p.strip() for p in effective(configs, "cleanup.policy").split(",")]
    # A compact-only topic is never trimmed by time or size: without a cleaner, keeping every
    # record is the closest to what a compacted topic keeps (the latest value of every key).
    deletes = "delete" in policies
    return PartitionConfig(
        segment_bytes=number("segment.bytes"),
        segment_ms=number("segment.ms"),
        retention_ms=number("retention.ms") if deletes else -1,
        retention_bytes=number("retention.bytes") if deletes else -1,
        max_message_bytes=number("max.message.bytes"),
        message_timestamp_type=effective(configs, "message.timestamp.type"),
        message_timestamp_before_max_ms=number("message.timestamp.before.max.ms"),
        message_timestamp_after_max_ms=number("message.timestamp.after.max.ms"),
        index_interval_bytes=number("index.interval.bytes"),
        compression_type=effective(configs, "compression.type", broker),
        compression_gzip_level=number("compression.gzip.level"),
        compression_lz4_level=number("compression.lz4.level"),
        compression_zstd_level=number("compression.zstd.level"),
    )


# Kafka's default of every broker setting behind a topic config (KafkaConfig's; None: defined with null).
BROKER_DEFAULTS: dict[str, str | None] = {
    d.broker_synonym: None if d.broker_synonym in NO_DEFAULT else d.default
    for d in TOPIC_CONFIGS.values()
    if d.broker_synonym is not None
} | {name: default for name, (default, _) in BROKER_ONLY_DEFAULTS.items()}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config: what DescribeConfigs and CreateTopics v5+ report."""

    name: str
    value: str | None
    source: ConfigSource
    definition: TopicConfigDef
    synonym_list: tuple[Synonym, ...] = ()
    """(name, value, source), most specific first, as ConfigHelper lists them (`synonyms.py`)."""

    def synonyms(self) -> list[Synonym]:
        return list(self.synonym_list)


def broker_settings(broker: Mapping[str, str]) -> dict[str, str]:
    """The broker's own settings behind topic configs, by the broker's name for them."""
    return {TOPIC_CONFIGS[name].broker_synonym or name: value for name, value in broker.items()}


def topic_synonyms(name: str, own: str | None, broker: Mapping[str, str] = _NO_BROKER) -> list[Synonym]:
    """ConfigHelper.createTopicConfigEntry's synonyms: the topic's own value (TOPIC_CONFIG), then the
    synonyms of the primary broker equivalent; none for a config without one
    (LogConfig.CONFIGS_WITH_NO_SERVER_DEFAULTS)."""
    definition = TOPIC_CONFIGS[name]
    found: list[Synonym] = [] if own is None else [(name, own, ConfigSource.DYNAMIC_TOPIC_CONFIG)]
    if definition.broker_synonym is not None:
        chain = BROKER_CHAINS.get(name, (definition.broker_synonym,))
        found += config_synonyms(chain[0], chain, broker_settings(broker), BROKER_DEFAULTS)
    return found


def describe_topic(
    configs: Mapping[str, str], keys: list[str] | None = None, broker: Mapping[str, str] = _NO_BROKER
) -> list[ConfigEntry]:
    """Every topic config (or those in `keys` that exist), with its value and where it comes from: the
    first synonym's source, DEFAULT_CONFIG when there is none (ConfigHelper.createTopicConfigEntry)."""
    # ConfigHelper.describeConfigs: null or empty keys = every config
    names = sorted(TOPIC_CONFIGS) if not keys else [k for k in keys if k in TOPIC_CONFIGS]
    entries = []
    for name in names:
        synonyms = topic_synonyms(name, configs.get(name), broker)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        value = effective(configs, name, broker)
        entries.append(ConfigEntry(name, value, source, TOPIC_CONFIGS[name], tuple(synonyms)))
    return entries
