"""GROUP config resources (ConfigResource type 32) for DescribeConfigs and both Alter APIs: what
`describe_configs.py` and `alter_configs.py` do with a group (kcoord/coordinator/groups/group_configs.py
has the keys, defaults, bounds and the record).

Describe (Kafka's ConfigHelper.describeConfigs, GROUP): every group config, the group's own value
or the broker's setting behind it, never read-only. Its synonyms (ConfigHelper.createGroupConfigEntry):
the group's own value (GROUP_CONFIG) first, then the broker setting's own synonyms as the BROKER
resource lists them (`GroupConfig.brokerSynonym`: group.consumer.session.timeout.ms for
consumer.session.timeout.ms, kcoord's flags STATIC_BROKER_CONFIG as there), or for a key without a
broker setting (share.auto.offset.reset, share.isolation.level, share.renew.acknowledge.enable) its
GroupConfig default under its own name (DEFAULT_CONFIG); the source is the first synonym's; a group
that does not exist describes the defaults, as Kafka does (its configs are not tied to the group's
existence there). Alter: the group's
complete new set (ControllerConfigurationValidator, GroupConfigManager.validate), written to the group's
log, then in force for its next heartbeat.

Cluster mode: the configs are cluster-wide records every node follows (`cluster_wide`; Kafka's
ConfigRecords of GROUP resources, which every broker applies), so any node describes and alters any
group's, as any Kafka broker does (KafkaAdminClient sends GROUP resources to the least loaded node);
an alter is answered once every live node applied it (kcoord/cluster/metadata_sync.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcoord.broker.context import ServerContext
from kcoord.broker.topics.configs import ConfigEntry, ConfigType, TopicConfigDef
from kcoord.broker.topics.synonyms import ConfigSource, Synonym, config_synonyms
from kcoord.coordinator.groups.group_configs import (
    GROUP_CONFIGS,
    KAFKA_DEFAULTS,
    GroupConfigBounds,
    InvalidGroupConfig,
    validate_group_configs,
)
from kcoord.protocol.errors import ErrorCode

__all__ = ["GROUP", "bounds", "cluster_wide", "describe_group", "new_group_configs", "own_configs"]

GROUP = 32  # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
Failure = tuple[ErrorCode, str | None]


def bounds(ctx: ServerContext) -> GroupConfigBounds:
    """The broker's group.consumer.* and group.share.* settings (kcoord's flags); streams.* are Kafka's."""
    config = ctx.config
    share_defaults, share_limits = config.share_group_bounds()
    return GroupConfigBounds(
        defaults={
            "group.consumer.session.timeout.ms": str(config.group_consumer_session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": str(config.group_consumer_heartbeat_interval_ms),
            **share_defaults,
        },
        limits={
            **share_limits,
            "group.consumer.min.session.timeout.ms": config.group_consumer_min_session_timeout_ms,
            "group.consumer.max.session.timeout.ms": config.group_consumer_max_session_timeout_ms,
            "group.consumer.min.heartbeat.interval.ms": config.group_consumer_min_heartbeat_interval_ms,
            "group.consumer.max.heartbeat.interval.ms": config.group_consumer_max_heartbeat_interval_ms,
        },
    )


def cluster_wide(ctx: ServerContext) -> bool:
    """Whether a group's configs are cluster-wide records every node holds (cluster mode), rather than
    records of the group's own log that only its coordinator reads (one node, where it is the same)."""
    return ctx.config.cluster is not None


def own_configs(ctx: ServerContext, group_id: str) -> Mapping[str, str] | None:
    """The group's own configs as this node answers them: in cluster mode whatever its shard's phase
    here (every node follows them), on one node once its log is loaded; None = refused (`_not_here`)."""
    if cluster_wide(ctx):
        return ctx.manager.group_configs.known(group_id)
    return ctx.manager.group_configs.of(group_id)


def _not_here(ctx: ServerContext, name: str) -> Failure:
    """The log's refusal on one node: loading or shut down (cluster mode does not refuse, above)."""
    return ctx.manager.group_configs.error(name) or ErrorCode.COORDINATOR_NOT_AVAILABLE, None


def describe_group(
    ctx: ServerContext, name: str, keys: list[str] | None
) -> list[ConfigEntry] | tuple[ErrorCode, str | None]:
    if not name:
        return ErrorCode.INVALID_REQUEST, "Group name must not be empty"
    own = own_configs(ctx, name)
    if own is None:
        return _not_here(ctx, name)
    defaults = bounds(ctx)
    entries = []
    for key in sorted(GROUP_CONFIGS) if not keys else [k for k in keys if k in GROUP_CONFIGS]:
        definition = GROUP_CONFIGS[key]
        value = own.get(key, defaults.default(key))
        synonyms = _synonyms(key, own, defaults)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        shown = TopicConfigDef(
            key, ConfigType[definition.type], value, True, documentation=definition.documentation
        )
        entries.append(ConfigEntry(key, value, source, shown, tuple(synonyms)))
    return entries


def _synonyms(key: str, own: Mapping[str, str], defaults: GroupConfigBounds) -> list[Synonym]:
    """ConfigHelper.createGroupConfigEntry's synonyms of `key`: the group's own value, then the broker
    setting's chain (kcoord's flags are its static settings, the rest Kafka's defaults)."""
    broker = GROUP_CONFIGS[key].broker
    found: list[Synonym] = [(key, own[key], ConfigSource.GROUP_CONFIG)] if key in own else []
    return found + config_synonyms(broker, (broker,), dict(defaults.defaults), KAFKA_DEFAULTS)


def new_group_configs(
    ctx: ServerContext, resource: dict[str, Any], incremental: bool
) -> Failure | dict[str, str]:
    """The group's complete new set of own configs, validated, or why not."""
    name = str(resource["resource_name"])
    if not name:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    current = own_configs(ctx, name)
    if current is None:
        return _not_here(ctx, name)
    entries: list[dict[str, Any]] = resource["configs"]
    names = [str(e["name"]) for e in entries]
    if len(set(names)) != len(names):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    if incremental:
        wanted = _apply_operations(current, entries)
        if isinstance(wanted, tuple):
            return wanted
    else:
        nulls = [n for n, e in zip(names, entries, strict=True) if e["value"] is None]
        if nulls:  # ConfigAdminManager.preprocessLegacyAlterConfigs
            return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}"
        wanted = {str(e["name"]): e["value"] for e in entries}
    try:
        return validate_group_configs(wanted, bounds(ctx))
    except InvalidGroupConfig as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)


def _apply_operations(
    current: Mapping[str, str], entries: list[dict[str, Any]]
) -> Failure | dict[str, str | None]:
    """ConfigurationControlManager.incrementalAlterConfigResource on the group's own configs: every
    group config is a single value, so APPEND and SUBTRACT are refused."""
    configs: dict[str, str | None] = dict(current)
    for entry in entries:
        key, operation, value = str(entry["name"]), int(entry["config_operation"]), entry["value"]
        if operation not in _OPERATIONS:
            return ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation} for key {key}"
        if operation == SET:
            configs[key] = value
        elif operation == DELETE:
            configs.pop(key, None)
        else:
            return (
                ErrorCode.INVALID_CONFIG,
                f"Can't {_OPERATIONS[operation]} to key {key} because its type is not LIST.",
            )
    return configs
