"""OffsetDelete (47), v0 only (KIP-496); response error_code precedes throttle_time_ms.

As Kafka's KafkaApis.handleDeleteOffsetsRequest: topics and partitions this broker does not know are
answered UNKNOWN_TOPIC_OR_PARTITION here, before the group is consulted; the group logic
(coordinator.groups.GroupManager) gets the rest (possibly none) and owns the semantics. Merging is
OffsetDeleteResponse.Builder.merge: a group-level error replaces the whole answer.
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
        ctx.manager.offset_delete(req, meta, respond)
        return

    def merged(response: dict[str, Any]) -> None:
        if response["error_code"]:
            respond(response)
        else:
            respond({**response, "topics": merge_topics(unknown, response["topics"])})

    ctx.manager.offset_delete({**req, "topics": known}, meta, merged)
