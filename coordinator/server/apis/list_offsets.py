"""ListOffsets (2), v0-7 (whatever protocol serves). v0: old_style_offsets; v1: timestamp/offset;
v2: isolation_level, throttle_time_ms; v4: leader epochs; v6: flexible; v7: MAX_TIMESTAMP (-3).

Partitions hold no records yet (the data plane is a later issue): earliest (-2), latest (-1) and
local-log-start (-4) are all offset 0. A lookup by timestamp, or max-timestamp, finds no record:
offset -1, timestamp -1, as Kafka answers on an empty log.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext
from protocol.errors import ErrorCode

__all__ = ["handle"]

LATEST, EARLIEST, LOCAL_LOG_START = -1, -2, -4
_AT_LOG_END = (LATEST, EARLIEST, LOCAL_LOG_START)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    topics = []
    for topic in req["topics"]:
        name = str(topic["name"])
        partitions = [_partition(ctx, name, p, version) for p in topic["partitions"]]
        topics.append({"name": name, "partitions": partitions})
    respond({"topics": topics})


def _partition(ctx: ServerContext, name: str, req: dict[str, Any], version: int) -> dict[str, Any]:
    index = int(req["partition_index"])
    entry: dict[str, Any] = {"partition_index": index}
    if not ctx.topics.has_partition(name, index):
        entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return entry
    entry["error_code"] = ErrorCode.NONE
    found = req["timestamp"] in _AT_LOG_END
    if version == 0:
        entry["old_style_offsets"] = [0] if found else []
        return entry
    entry["offset"] = 0 if found else -1
    entry["timestamp"] = -1
    if version >= 4:
        entry["leader_epoch"] = 0 if found else -1
    return entry
