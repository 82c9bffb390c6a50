"""A group's own configs through the runtime's one write path: alter (answered once durable, then in
force), read, and the tombstone that deletes them with their group (group_configs.py says why).

In cluster mode the record is cluster-wide (kcoord/cluster/shard_log.py `shard_key` None): written to
`kcoord_metadata` and followed by every node, as Kafka's brokers follow the ConfigRecords of GROUP
resources in the metadata log. So every node holds every group's configs (`known`), and any node may
write them (`alter(..., anywhere=True)`), whichever node coordinates the group."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.group_configs import GroupConfigRecord
from kcoord.coordinator.groups.runtime import Runtime, Write

__all__ = ["GroupConfigApi", "GroupConfigDone"]

_NONE: Mapping[str, str] = MappingProxyType({})

GroupConfigDone = Callable[[ErrorCode | None, BaseException | None], None]
"""(a coordinator refusal such as NOT_COORDINATOR, the write's failure): both None once in force."""


class GroupConfigApi:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def of(self, group_id: str) -> dict[str, str] | None:
        """The group's own configs as loaded here, or None when its shard is not served here (its
        phase error); {} for a group with none (or no group at all: Kafka describes the defaults)."""
        if self.rt.phase_error(group_id) is not None:
            return None
        return dict(self.rt.group_configs.get(group_id, {}))

    def known(self, group_id: str) -> Mapping[str, str]:
        """The group's own configs as this node holds them, whatever its shard's phase: in cluster mode
        every node follows every group's configs, so any node answers them; empty for none. Not a
        copy (read on every ShareFetch): read it, do not keep it."""
        return self.rt.group_configs.get(group_id, _NONE)

    def error(self, group_id: str) -> ErrorCode | None:
        """Why the group's configs cannot be read or written here now (its shard's phase): loading,
        not coordinated by this node (cluster mode), shut down; None when they can."""
        return self.rt.phase_error(group_id)

    def configured(self, anywhere: bool = False) -> list[str]:
        """The groups with configs of their own among those served here (ListConfigResources); with
        `anywhere` (cluster mode) every group's, wherever it is coordinated."""
        return [
            g
            for g, configs in self.rt.group_configs.items()
            if configs and (anywhere or self.rt.phase_error(g) is None)
        ]

    def alter(
        self, group_id: str, configs: Mapping[str, str], done: GroupConfigDone, *, anywhere: bool = False
    ) -> None:
        """Replace the group's own configs with `configs` (already validated); the record is applied
        once durable, so the group's next heartbeat and session use them. `anywhere` (cluster mode: the
        record is cluster-wide, answered once every live node applied it) writes it on a node that
        does not coordinate the group, as any Kafka broker takes a GROUP resource's alter."""
        error = None if anywhere else self.rt.phase_error(group_id)
        if error is not None:
            done(error, None)
            return
        # conditional: computed from the configs held here (a cluster's log refuses it when another
        # node wrote the group's since: GroupConfigsChanged, and the caller computes them again)
        record = GroupConfigRecord(group_id, tuple(sorted(configs.items())), conditional=True)
        self.rt.run(Write([record], lambda exc: done(None, exc)))


def apply_group_config(configs: dict[str, dict[str, str]], record: GroupConfigRecord) -> None:
    """Replay (recovery and the live write path once durable)."""
    if record.configs:
        configs[record.group_id] = dict(record.configs)
    else:
        configs.pop(record.group_id, None)
