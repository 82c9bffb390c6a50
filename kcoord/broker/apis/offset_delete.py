"""OffsetDelete (47), v0 only (KIP-496); response error_code precedes throttle_time_ms.

As Kafka's KafkaApis.handleDeleteOffsetsRequest: topics and partitions this broker does not know are
answered UNKNOWN_TOPIC_OR_PARTITION here, before the group is consulted; the group logic
(coordinator.groups.GroupManager) gets the rest (possibly none) as typed (topic, partitions) pairs
and owns the semantics. Merging is OffsetDeleteResponse.Builder.merge: a group-level error replaces
the whole answer.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.unknown_partitions import merge_topics, split_unknown
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics, refused = req["topics"], []
    if ctx.authorizer is not None:
        group_id = str(req.get("group_id") or "")
        # KafkaApis.handleOffsetDeleteRequest: DELETE on the group, then READ on each topic
        if not authz.allowed(ctx, meta, 47, AclOperation.DELETE, ResourceType.GROUP, group_id):
            respond({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "topics": []})
            return
        names = [str(t["name"]) for t in topics]
        ok = authz.filter_allowed(ctx, meta, 47, AclOperation.READ, ResourceType.TOPIC, names)
        refused = [_refused(t) for t in topics if t["name"] not in ok]
        topics = [t for t in topics if t["name"] in ok]
    known, unknown = split_unknown(ctx, topics)
    unknown = [*refused, *unknown]
    typed = [(str(t["name"]), [int(p["partition_index"]) for p in t["partitions"]]) for t in known]

    def answer(error: ErrorCode, results: list[tuple[str, list[tuple[int, ErrorCode]]]]) -> None:
        if error:
            respond({"error_code": int(error), "topics": []})
            return
        topics = [
            {"name": name, "partitions": [{"partition_index": p, "error_code": int(e)} for p, e in parts]}
            for name, parts in results
        ]
        respond({"error_code": 0, "topics": merge_topics(topics, unknown) if unknown else topics})

    ctx.manager.offset_delete(str(req.get("group_id") or ""), typed, answer)


def _refused(topic: dict[str, Any]) -> dict[str, Any]:
    denied = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    parts = [{"partition_index": p["partition_index"], "error_code": denied} for p in topic["partitions"]]
    return {"name": topic["name"], "partitions": parts}
