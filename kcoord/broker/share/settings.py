"""A share group's settings as the tenant takes them: the group's own share.* configs over the broker's
group.share.* defaults (Kafka's GroupConfig over ShareGroupConfig, as SharePartitionManager reads them
through GroupConfigManager)."""

from __future__ import annotations

from kcoord.broker.apis.group_config_resources import bounds
from kcoord.broker.context import ServerContext
from kcoord.coordinator.share_partitions import ShareSettings

__all__ = ["READ_COMMITTED", "renew_enabled", "share_settings"]

READ_COMMITTED = 1


def _value(ctx: ServerContext, group_id: str, key: str) -> str:
    own = ctx.manager.group_configs.of(group_id) or {}
    return own.get(key) or bounds(ctx).default(key)


def share_settings(ctx: ServerContext, group_id: str) -> ShareSettings:
    isolation = _value(ctx, group_id, "share.isolation.level")
    return ShareSettings(
        record_lock_duration_ms=int(_value(ctx, group_id, "share.record.lock.duration.ms")),
        delivery_count_limit=int(_value(ctx, group_id, "share.delivery.count.limit")),
        partition_max_record_locks=int(_value(ctx, group_id, "share.partition.max.record.locks")),
        auto_offset_reset=_value(ctx, group_id, "share.auto.offset.reset"),
        isolation_level=READ_COMMITTED if isolation == "read_committed" else 0,
    )


def renew_enabled(ctx: ServerContext, group_id: str) -> bool:
    """share.renew.acknowledge.enable (KIP-1222, KIP-1240): may members renew their locks."""
    return _value(ctx, group_id, "share.renew.acknowledge.enable").lower() == "true"
