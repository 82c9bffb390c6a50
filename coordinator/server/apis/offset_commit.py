"""OffsetCommit (8), v0-9. v1: generation/member id, commit_timestamp; v2-4: retention_time_ms;
v3: throttle_time_ms; v6: committed_leader_epoch; v7: group_instance_id; v8: flexible.

As Kafka's KafkaApis does before reaching the coordinator, partitions of topics (or partition
indexes) this broker does not know are answered UNKNOWN_TOPIC_OR_PARTITION here; the rest goes to
the group logic, and both answers are merged into one response.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.server.apis.unknown_partitions import merge_topics, split_unknown
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    known, unknown = split_unknown(ctx, req["topics"])
    if not unknown:
        ctx.manager.offset_commit(req, meta, respond)  # the common case: no copy
        return
    if not known:
        respond({"topics": unknown})
        return

    def merged(response: dict[str, Any]) -> None:
        respond({**response, "topics": merge_topics(response["topics"], unknown)})

    ctx.manager.offset_commit({**req, "topics": known}, meta, merged)
