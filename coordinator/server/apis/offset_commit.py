"""OffsetCommit (8), v0-9. v1: generation/member id, commit_timestamp; v2-4: retention_time_ms;
v3: throttle_time_ms; v6: committed_leader_epoch; v7: group_instance_id; v8: flexible.

As Kafka's KafkaApis does before reaching the coordinator, partitions of topics (or partition
indexes) this broker does not know are answered UNKNOWN_TOPIC_OR_PARTITION here; the rest goes to
the group logic, and both answers are merged into one response.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext
from protocol.errors import ErrorCode

__all__ = ["handle"]

Topics = list[dict[str, Any]]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    known, unknown = _split(ctx, req["topics"])
    if not unknown:
        ctx.manager.offset_commit(req, meta, respond)  # the common case: no copy
        return
    if not known:
        respond({"topics": unknown})
        return

    def merged(response: dict[str, Any]) -> None:
        respond({**response, "topics": _merge(response["topics"], unknown)})

    ctx.manager.offset_commit({**req, "topics": known}, meta, merged)


def _split(ctx: ServerContext, topics: Topics) -> tuple[Topics, Topics]:
    """(request topics with known partitions, response entries for the unknown ones)."""
    known: Topics = []
    unknown: Topics = []
    for topic in topics:
        name = str(topic["name"])
        parts: list[dict[str, Any]] = topic["partitions"]
        good = [p for p in parts if ctx.topics.has_partition(name, int(p["partition_index"]))]
        if len(good) == len(parts):
            known.append(topic)
            continue
        if good:
            known.append({**topic, "partitions": good})
        unknown.append(
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    }
                    for p in parts
                    if p not in good
                ],
            }
        )
    return known, unknown


def _merge(answered: Topics, unknown: Topics) -> Topics:
    by_name = {str(t["name"]): t for t in unknown}
    out: Topics = []
    for topic in answered:
        extra = by_name.pop(str(topic["name"]), None)
        if extra is None:
            out.append(topic)
        else:
            out.append({**topic, "partitions": [*topic["partitions"], *extra["partitions"]]})
    return out + list(by_name.values())
