"""A group's configs for `kcoord groups --describe` (issue 33): DescribeConfigs of the GROUP resource
(type 32) at the group's coordinator, as `kafka-configs.sh --entity-type groups --describe --all`
would show them: every group config with its value and whether the group sets it or takes the broker's
default. Kafka's kafka-consumer-groups.sh shows no configs; kcoord shows them with `--configs`, and
always in `--output json` (docs/compat.md)."""

from __future__ import annotations

from typing import Any

from kcoord.client_cli.error_text import error_text
from kcoord.client_cli.kafka_client import COORDINATOR_RETRIABLE, Cluster, Connection, ToolError
from kcoord.protocol.errors import ErrorCode

__all__ = ["group_configs"]

DESCRIBE_CONFIGS, GROUP = 32, 32
# ConfigSource: GROUP_CONFIG is the group's own; the broker's setting behind a group config may come from
# its dynamic defaults, its own settings or Kafka's default (3, 4, 5: ConfigHelper.createGroupConfigEntry)
_SOURCES = {8: "group", 3: "default", 4: "default", 5: "default"}


def group_configs(cluster: Cluster, group: str) -> list[dict[str, Any]]:
    """[{name, value, source}] sorted by name; [] when the coordinator has no group configs (an older
    server, or one that refuses the GROUP resource)."""

    def call(conn: Connection) -> dict[str, Any] | None:
        if DESCRIBE_CONFIGS not in conn.versions:
            return None
        resource = {"resource_type": GROUP, "resource_name": group, "configuration_keys": None}
        body = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
        return conn.request(DESCRIBE_CONFIGS, body)["results"][0]  # type: ignore[no-any-return]

    def retriable(result: dict[str, Any] | None) -> bool:
        return result is not None and result["error_code"] in COORDINATOR_RETRIABLE

    result = cluster.with_coordinator(group, call, retriable)
    if result is None or result["error_code"] in (ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_VERSION):
        return []
    if result["error_code"] != ErrorCode.NONE:
        raise ToolError(f"cannot describe the configs of group '{group}': {error_text(result['error_code'])}")
    return sorted(
        (
            {"name": c["name"], "value": c["value"], "source": _SOURCES.get(c["config_source"], "other")}
            for c in result["configs"]
        ),
        key=lambda c: str(c["name"]),
    )
