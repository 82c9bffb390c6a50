"""A share group's settings as the tenant takes them: the group's own share.* configs over the broker's
group.share.* defaults (Kafka's GroupConfig over ShareGroupConfig, as SharePartitionManager reads them
through GroupConfigManager).

Read on every ShareFetch, so from memory only. In cluster mode a partition's leader is often not the
group's coordinator: it reads the configs every node follows (`own_configs`: cluster-wide records,
kcoord/cluster/metadata_sync.py), as every Kafka broker's GroupConfigManager holds every group's
configs from the metadata log (DynamicConfigPublisher, resource type GROUP ->
GroupConfigHandler.processConfigChanges -> GroupCoordinatorService.updateGroupConfig)."""

from __future__ import annotations

from collections.abc import Mapping

from kcoord.broker.apis.group_config_resources import bounds, own_configs
from kcoord.broker.context import ServerContext
from kcoord.coordinator.groups.group_configs import GroupConfigBounds
from kcoord.coordinator.share_partitions import ShareSettings

__all__ = ["READ_COMMITTED", "renew_enabled", "share_settings"]

READ_COMMITTED = 1


def _value(own: Mapping[str, str], defaults: GroupConfigBounds, key: str) -> str:
    return own.get(key) or defaults.default(key)


def share_settings(ctx: ServerContext, group_id: str) -> ShareSettings:
    own, defaults = own_configs(ctx, group_id) or {}, bounds(ctx)
    isolation = _value(own, defaults, "share.isolation.level")
    return ShareSettings(
        record_lock_duration_ms=int(_value(own, defaults, "share.record.lock.duration.ms")),
        delivery_count_limit=int(_value(own, defaults, "share.delivery.count.limit")),
        partition_max_record_locks=int(_value(own, defaults, "share.partition.max.record.locks")),
        auto_offset_reset=_value(own, defaults, "share.auto.offset.reset"),
        isolation_level=READ_COMMITTED if isolation == "read_committed" else 0,
    )


def renew_enabled(ctx: ServerContext, group_id: str) -> bool:
    """share.renew.acknowledge.enable (KIP-1222, KIP-1240): may members renew their locks."""
    own = own_configs(ctx, group_id) or {}
    return _value(own, bounds(ctx), "share.renew.acknowledge.enable").lower() == "true"
