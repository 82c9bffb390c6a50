"""A group's own configs (kcoord/coordinator/groups/group_configs.py GroupConfigRecord) <-> storage
records: storage type 11, key GroupConfigKey v0 (the group id), value GroupConfigValue v0 (the configs,
sorted by name). A None value is a tombstone: the group has no configs left, or was deleted.

Kafka stores group configs as ConfigRecords of its metadata log; kcoord keeps them in the node's log,
and in cluster mode in `kcoord_metadata`, which every node follows (docs/compat.md)."""

from __future__ import annotations

from kcoord import storage
from kcoord.coordinator.groups.group_configs import GroupConfigRecord
from kcoord.protocol.messages.records import decode_exact, encode_versioned
from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import STRING

__all__ = [
    "GROUP_CONFIG_RECORD_TYPE",
    "group_config_from_storage",
    "group_config_to_storage",
    "render_group_config",
]

GROUP_CONFIG_RECORD_TYPE = 11
GROUP_CONFIG_KEY = Schema("GroupConfigKey", versions=range(0, 1), fields=(Field("group", STRING),))
_ENTRY = Schema("GroupConfigEntry", fields=(Field("name", STRING), Field("value", STRING)))
GROUP_CONFIG_VALUE = Schema(
    "GroupConfigValue", versions=range(0, 1), fields=(Field("configs", array(_ENTRY)),)
)


def group_config_to_storage(record: GroupConfigRecord) -> storage.Record:
    key = encode_versioned(GROUP_CONFIG_KEY, 0, {"group": record.group_id})
    if not record.configs:
        return storage.Record(GROUP_CONFIG_RECORD_TYPE, key, None)
    entries = [{"name": name, "value": value} for name, value in record.configs]
    return storage.Record(
        GROUP_CONFIG_RECORD_TYPE, key, encode_versioned(GROUP_CONFIG_VALUE, 0, {"configs": entries})
    )


def group_config_from_storage(record: storage.Record) -> GroupConfigRecord:
    group_id = decode_exact(GROUP_CONFIG_KEY, record.key)["group"]
    if record.value is None:
        return GroupConfigRecord(group_id, ())
    entries = decode_exact(GROUP_CONFIG_VALUE, record.value)["configs"]
    return GroupConfigRecord(group_id, tuple((e["name"], e["value"]) for e in entries))


def render_group_config(record: GroupConfigRecord) -> str:
    if not record.configs:
        return f"group_config group={record.group_id} tombstone"
    configs = ",".join(f"{name}={value}" for name, value in record.configs)
    return f"group_config group={record.group_id} configs=[{configs}]"
