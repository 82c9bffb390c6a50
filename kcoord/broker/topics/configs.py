"""Topic configs: Kafka's names, types and defaults, which of them kcoord acts on, and validation.

Three kinds of Kafka topic config (`org.apache.kafka.common.config.TopicConfig`, defaults from
`LogConfig` / `ServerLogConfigs` of Kafka 4):

- *honoured*: kcoord's partition logs act on them (segment, retention, size and timestamp limits,
  `min.insync.replicas` against the one replica, `cleanup.policy`'s `delete`);
- *inert*: meaningful only for replication, the log cleaner, remote storage or flush tuning, which a
  single node without those parts does not have; accepted, stored and described, with no effect
  (docs/compat.md);
- refused: an unknown name (`Unknown topic config name: x`, as Kafka's `LogConfig.validateNames`), or
  a value kcoord cannot honour (`compression.type` other than `producer`: batches are stored
  verbatim and never recompressed; `remote.storage.enable=true`).

Values are validated the way Kafka's `ConfigDef` parses them (type, then range), with its message:
`Invalid value X for configuration Y: reason`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from kcoord.partition_log import PartitionConfig

__all__ = [
    "TOPIC_CONFIGS",
    "ConfigEntry",
    "ConfigSource",
    "ConfigType",
    "InvalidConfig",
    "TopicConfigDef",
    "describe_topic",
    "effective",
    "partition_config",
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


class ConfigSource(IntEnum):
    """DescribeConfigsResponse.ConfigSource."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


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
            choices=("producer",),
            documentation="only producer: batches are stored as the producer compressed them",
        ),
        TopicConfigDef("compression.gzip.level", _T.INT, "-1", False, "compression.gzip.level", at_least=-1),
        TopicConfigDef("compression.lz4.level", _T.INT, "9", False, "compression.lz4.level", at_least=1),
        TopicConfigDef(
            "compression.zstd.level", _T.INT, "3", False, "compression.zstd.level", at_least=-131072
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
    if (
        definition.choices
        and definition.type is not ConfigType.LIST
        and str(parsed) not in definition.choices
    ):
        raise _invalid(definition, value, _NOT_SUPPORTED.get(definition.name, _one_of(definition)))
    return parsed


_NOT_SUPPORTED = {
    "compression.type": "kcoord stores record batches as the producer compressed them and never "
    "recompresses; only compression.type=producer is supported",
    "remote.storage.enable": "kcoord has no tiered storage",
}


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


def effective(configs: Mapping[str, str], name: str) -> str:
    """The topic's value of `name`: its own setting, else Kafka's default."""
    value = configs.get(name)
    return TOPIC_CONFIGS[name].default if value is None else value


def partition_config(configs: Mapping[str, str]) -> PartitionConfig:
    """What the partition log acts on, from a topic's stored (already validated) configs."""

    def number(name: str) -> int:
        return int(effective(configs, name))

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
    )


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config: what DescribeConfigs and CreateTopics v5+ report."""

    name: str
    value: str | None
    source: ConfigSource
    definition: TopicConfigDef

    def synonyms(self) -> list[tuple[str, str | None, ConfigSource]]:
        """(name, value, source), most specific first: the topic's own setting, then the default."""
        found: list[tuple[str, str | None, ConfigSource]] = []
        if self.source is not ConfigSource.DEFAULT_CONFIG:
            found.append((self.name, self.value, self.source))
        if self.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DEFAULT_CONFIG):
            default_name = self.definition.broker_synonym or self.name
            found.append((default_name, self.definition.default, ConfigSource.DEFAULT_CONFIG))
        return found


def describe_topic(configs: Mapping[str, str], keys: list[str] | None = None) -> list[ConfigEntry]:
    """Every topic config (or those in `keys` that exist), with its value and where it comes from."""
    names = sorted(TOPIC_CONFIGS) if keys is None else [k for k in keys if k in TOPIC_CONFIGS]
    entries = []
    for name in names:
        own = configs.get(name)
        source = ConfigSource.DEFAULT_CONFIG if own is None else ConfigSource.DYNAMIC_TOPIC_CONFIG
        entries.append(ConfigEntry(name, effective(configs, name), source, TOPIC_CONFIGS[name]))
    return entries
