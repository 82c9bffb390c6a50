"""Group config resources (ConfigResource type 32, KIP-848): the keys, their defaults and bounds,
validation, the record that persists a group's own configs, and the values the group logic uses.

Kafka keeps a group's configs in the cluster metadata (ConfigRecord) and hands them to the group
coordinator (`GroupConfigManager`); the consumer group uses them at once: the next heartbeat answers
with the group's `consumer.heartbeat.interval.ms` and member sessions are scheduled with its
`consumer.session.timeout.ms` (GroupMetadataManager.consumerGroupHeartbeatIntervalMs /
consumerGroupSessionTimeoutMs). kcoord has no metadata quorum: a group's configs are a record written
through the runtime's one write path, applied once durable, replayed on restart, and tombstoned with the
group (DeleteGroups, offset expiry of an empty group); on one node in the node's log, in cluster mode a
cluster-wide record every node follows (`kcoord_metadata`, group_config_api.py), as Kafka's brokers all
apply a GROUP resource's ConfigRecords.

The keys, types, defaults and checks are those of Kafka 4.3.1's `GroupConfig` (its CONFIG_DEF: the
consumer.*, share.* and streams.* keys, 4.3's three assignment intervals among them); a default is the
broker's `group.<type>.*` setting (`GroupCoordinatorConfig.extractGroupConfigMap`), and
`GroupConfig.validate` checks the group's whole new set, every key defaulting to the broker's, against
the broker's min/max (`validateValues`, in its order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "GROUP_CONFIGS",
    "GroupConfigBounds",
    "GroupConfigDef",
    "GroupConfigRecord",
    "GroupConfigsChanged",
    "InvalidGroupConfig",
    "config_tombstones",
    "effective_int",
    "validate_group_configs",
]

INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class GroupConfigRecord:
    """Key (group) -> the group's own configs, sorted by name; () = none left (a tombstone in the log).

    `conditional` (not stored): the configs were computed from the ones this node holds, so a log
    shared by several writers (cluster mode) writes them only over those, and fails the write with
    `GroupConfigsChanged` when another writer's came in between; a deletion's tombstone is not."""

    group_id: str
    configs: tuple[tuple[str, str], ...]
    conditional: bool = field(default=False, compare=False)


class GroupConfigsChanged(Exception):
    """A conditional GroupConfigRecord was not written: another node wrote the group's configs since
    this node's copy was read. Compute them again from the newer copy (Kafka's controller applies
    concurrent alters in turn)."""


class InvalidGroupConfig(ValueError):
    """A group config name or value Kafka refuses (INVALID_CONFIG); the message is Kafka's."""


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: str  # ConfigDef.Type: INT, LONG, BOOLEAN or STRING
    broker: str  # the broker setting that defaults it (DescribeConfigs shows its value)
    at_least: int | None = None  # GroupConfig's own ConfigDef.Range
    choices: tuple[str, ...] = ()
    documentation: str = ""


_D = GroupConfigDef
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        _D("consumer.session.timeout.ms", "INT", "group.consumer.session.timeout.ms", 1,
           documentation="The consumer group's member session timeout: a member that does not heartbeat "
           "within it is removed."),
        _D("consumer.heartbeat.interval.ms", "INT", "group.consumer.heartbeat.interval.ms", 1,
           documentation="How often the consumer group's members are told to heartbeat."),
        # Kafka 4.3 (its group-configs page): how often the assignment is recomputed; kcoord assigns at
        # once on every change, so these are stored and described only (docs/compat.md)
        _D("consumer.assignment.interval.ms", "INT", "group.consumer.assignment.interval.ms", 0,
           documentation="The interval between assignment updates of a consumer group (stored and described; "
           "kcoord assigns on every change)."),
        _D("streams.assignment.interval.ms", "INT", "group.streams.assignment.interval.ms", 0,
           documentation="The interval between assignment updates of a streams group (stored and "
           "described)."),
        _D("share.assignment.interval.ms", "INT", "group.share.assignment.interval.ms", 0,
           documentation="The interval between assignment updates of a share group (stored and described)."),
        _D("share.session.timeout.ms", "INT", "group.share.session.timeout.ms", 1,
           documentation="The share group's member session timeout."),
        _D("share.heartbeat.interval.ms", "INT", "group.share.heartbeat.interval.ms", 1,
           documentation="How often the share group's members are told to heartbeat."),
        _D("share.record.lock.duration.ms", "INT", "group.share.record.lock.duration.ms", 1000,
           documentation="How long a share group member holds a delivered record before it is released."),
        _D("share.delivery.count.limit", "INT", "group.share.delivery.count.limit", 2,
           documentation="How many times a share group delivers a record before it gives up on it."),
        _D("share.partition.max.record.locks", "INT", "group.share.partition.max.record.locks", 100,
           documentation="The most records of one partition a share group holds acquired at once."),
        _D("share.auto.offset.reset", "STRING", "share.auto.offset.reset",
           documentation="Where a share group starts on a partition with no state: latest, earliest or "
           "by_duration:<ISO-8601 duration>."),
        _D("share.isolation.level", "STRING", "share.isolation.level",
           choices=("read_committed", "read_uncommitted"),
           documentation="Whether a share group delivers only committed transactional records."),
        _D("share.renew.acknowledge.enable", "BOOLEAN", "share.renew.acknowledge.enable",
           documentation="Whether share group members may renew their acquisition of a record."),
        _D("streams.session.timeout.ms", "INT", "group.streams.session.timeout.ms", 1,
           documentation="The streams group's member session timeout."),
        _D("streams.heartbeat.interval.ms", "INT", "group.streams.heartbeat.interval.ms", 1,
           documentation="How often the streams group's members are told to heartbeat."),
        _D("streams.num.standby.replicas", "INT", "group.streams.num.standby.replicas", 0,
           documentation="How many standby replicas of each task the streams group assigns."),
        _D("streams.initial.rebalance.delay.ms", "INT", "group.streams.initial.rebalance.delay.ms", 0,
           documentation="How long a new streams group waits for more members before its first assignment."),
    )
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class GroupConfigBounds:
    """The broker's group settings: the defaults of the group configs and their min/max
    (GroupCoordinatorConfig, ShareGroupConfig); each defaults to Kafka's value."""

    defaults: Mapping[str, str] = field(default_factory=dict)
    """Broker setting name -> its value where kcoord's flags set it (the group.consumer.* ones)."""
    limits: Mapping[str, int] = field(default_factory=dict)
    """Broker min/max setting name -> value, where kcoord's flags set it."""

    def default(self, name: str) -> str:
        broker = GROUP_CONFIGS[name].broker
        return self.defaults.get(broker, KAFKA_DEFAULTS[broker])

    def limit(self, setting: str) -> int:
        return self.limits.get(setting, KAFKA_LIMITS[setting])


# Kafka's defaults of the broker settings behind the group configs (GroupCoordinatorConfig,
# ShareGroupConfig, GroupConfig's own for the share keys with no broker setting).
KAFKA_DEFAULTS: dict[str, str] = {
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.assignment.interval.ms": "1000",
    "group.share.assignment.interval.ms": "1000",
    "group.streams.assignment.interval.ms": "1000",
    "group.share.session.timeout.ms": "45000",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.delivery.count.limit": "5",
    "group.share.partition.max.record.locks": "2000",
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.renew.acknowledge.enable": "true",
    "group.streams.session.timeout.ms": "45000",
    "group.streams.heartbeat.interval.ms": "5000",
    "group.streams.num.standby.replicas": "0",
    "group.streams.initial.rebalance.delay.ms": "3000",
}
KAFKA_LIMITS: dict[str, int] = {
    "group.consumer.min.session.timeout.ms": 45_000,
    "group.consumer.max.session.timeout.ms": 60_000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15_000,
    "group.share.min.session.timeout.ms": 45_000,
    "group.share.max.session.timeout.ms": 60_000,
    "group.share.min.heartbeat.interval.ms": 5000,
    "group.share.max.heartbeat.interval.ms": 15_000,
    "group.share.min.record.lock.duration.ms": 15_000,
    "group.share.max.record.lock.duration.ms": 60_000,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4000,  # its default (ShareGroupConfig); 10,000 is its bound
    "group.streams.min.session.timeout.ms": 45_000,
    "group.streams.max.session.timeout.ms": 60_000,
    "group.streams.min.heartbeat.interval.ms": 5000,
    "group.streams.max.heartbeat.interval.ms": 15_000,
    "group.streams.max.standby.replicas": 2,
    # Kafka 4.3's bounds of the assignment intervals (GroupCoordinatorConfig)
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15_000,
    "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15_000,
    "group.streams.min.assignment.interval.ms": 0,
    "group.streams.max.assignment.interval.ms": 15_000,
}

# key -> (broker min setting, broker max setting), in GroupConfig.validateValues' order; None = no bound
_RANGES: tuple[tuple[str, str | None, str | None], ...] = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
     "group.consumer.max.session.timeout.ms"),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
     "group.consumer.max.assignment.interval.ms"),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms",
     "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit",
     "group.share.max.delivery.count.limit"),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks",
     "group.share.max.partition.max.record.locks"),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms",
     "group.share.max.assignment.interval.ms"),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms",
     "group.streams.max.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms",
     "group.streams.max.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms",
     "group.streams.max.assignment.interval.ms"),
)  # fmt: skip
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


def _parse(definition: GroupConfigDef, text: str) -> int | str:
    """ConfigDef.parseType then the key's own validator, with ConfigDef's messages."""
    value = text.strip()

    def invalid(reason: str) -> InvalidGroupConfig:
        return InvalidGroupConfig(f"Invalid value {text} for configuration {definition.name}: {reason}")

    if definition.type == "BOOLEAN":
        if value.lower() not in ("true", "false"):
            raise invalid("Expected value to be either true or false")
        return value.lower()
    if definition.type == "STRING":
        if definition.choices and value not in definition.choices:
            raise invalid(f"String must be one of: {', '.join(definition.choices)}")
        if definition.name == "share.auto.offset.reset" and not _is_reset_strategy(value):
            raise invalid("Invalid value for share.auto.offset.reset")
        return value
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not -INT_MAX - 1 <= number <= INT_MAX:
        raise invalid("Not a number of type INT")
    if definition.at_least is not None and number < definition.at_least:
        raise invalid(f"Value must be at least {definition.at_least}")
    return number


def _is_reset_strategy(value: str) -> bool:
    """ShareGroupAutoOffsetResetStrategy.Validator: latest, earliest, or by_duration:<ISO-8601 duration>
    that is not negative."""
    lowered = value.lower()
    if lowered in ("latest", "earliest"):
        return True
    prefix = "by_duration:"
    return lowered.startswith(prefix) and lowered[len(prefix) :].upper().startswith("P")


def validate_group_configs(configs: Mapping[str, str | None], bounds: GroupConfigBounds) -> dict[str, str]:
    """A group's complete new set of own configs, checked as ControllerConfigurationValidator and
    GroupConfigManager.validate check it; the values to store, or InvalidGroupConfig."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidGroupConfig(f"Null value not supported for group configs: {','.join(nulls)}")
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise InvalidGroupConfig(f"Unknown group config name: {name}")
    stored = {name: str(value).strip() for name, value in configs.items()}
    parsed = {name: _parse(GROUP_CONFIGS[name], stored[name]) for name in GROUP_CONFIGS if name in stored}
    # Every key defaults to the broker's setting (GroupConfig.validate puts extractGroupConfigMap under
    # the group's own values).
    values = {name: parsed.get(name, bounds.default(name)) for name in GROUP_CONFIGS}
    for name, low, high in _RANGES:
        value = int(values[name])
        if low is not None and value < bounds.limit(low):
            raise InvalidGroupConfig(f"{name} must be greater than or equal to {low}")
        if high is not None and value > bounds.limit(high):
            raise InvalidGroupConfig(f"{name} must be less than or equal to {high}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if int(values[session]) <= int(values[heartbeat]):
            raise InvalidGroupConfig(f"{session} must be greater than {heartbeat}")
    return stored


def effective_int(own: Mapping[str, str] | None, name: str, default: int) -> int:
    """The group's value of an INT config, else the broker's (`default`): what the group logic uses."""
    value = None if own is None else own.get(name)
    return default if value is None else int(value)


def config_tombstones(configs: Mapping[str, Mapping[str, str]], group_id: str) -> list[GroupConfigRecord]:
    """The record that deletes a deleted group's configs with it, if it has any (DeleteGroups, offset
    expiry of an empty group; Kafka drops a deleted group's configs with the group)."""
    return [GroupConfigRecord(group_id, ())] if configs.get(group_id) else []
