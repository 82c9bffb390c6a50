"""ShareAcknowledge (79), v1-2 (KIP-932). v2: is_renew_ack (KIP-1222) and acquisition_lock_timeout_ms.

KafkaApis.handleShareAcknowledgeRequest: READ on the group, the share session's epoch moved on
(SharePartitionManager.acknowledgeSessionUpdate: epoch 0 is INVALID_SHARE_SESSION_EPOCH, -1 acknowledges
and then closes the session, releasing what the member still holds), READ on each topic, then each
partition's acknowledgements answered once durable.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.share.acks import AckResults, acknowledge
from kcoord.broker.share.answer import group_refusal, leaders, topic_readable
from kcoord.broker.share.sessions import FINAL_EPOCH
from kcoord.broker.share.settings import renew_enabled, share_settings
from kcoord.protocol.errors import ErrorCode

__all__ = ["API_KEY", "handle"]

API_KEY = 79


def _refused(error: ErrorCode) -> dict[str, object]:
    return {"error_code": error, "responses": [], "node_endpoints": []}


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    edge = ctx.share
    if edge is None:
        respond(_refused(ErrorCode.UNSUPPORTED_VERSION))
        return
    error = group_refusal(ctx, meta, API_KEY, req)
    if error is not ErrorCode.NONE:
        respond(_refused(error))
        return
    group_id, member_id, epoch = req["group_id"], req["member_id"], int(req["share_session_epoch"])
    session = edge.sessions.acknowledge_update(group_id, member_id, epoch)
    if isinstance(session, ErrorCode):
        respond(_refused(session))
        return
    settings = share_settings(ctx, group_id)
    renew = meta.api_version >= 2 and bool(req["is_renew_ack"]) and renew_enabled(ctx, group_id)
    readable = topic_readable(ctx, meta, API_KEY, {t["topic_id"] for t in req["topics"]})

    def acked(results: AckResults) -> None:
        by_topic: dict[Any, list[dict[str, Any]]] = {}
        for (topic_id, partition), code in results.items():
            by_topic.setdefault(topic_id, []).append(
                {"partition_index": partition, "error_code": code, "error_message": None,
                 "current_leader": {"leader_id": 0, "leader_epoch": 0}}
            )  # fmt: skip
        responses = [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]
        if epoch == FINAL_EPOCH:  # KafkaApis: releaseSession after the final acknowledgements
            edge.sessions.remove(group_id, member_id)
            edge.partitions.release_member(group_id, member_id)
        body: dict[str, object] = {
            "error_code": ErrorCode.NONE,
            "responses": responses,
            "node_endpoints": leaders(ctx, meta, responses),
        }
        if meta.api_version >= 2:  # v1 has no such field (ignorable in Kafka's schema: dropped there)
            body["acquisition_lock_timeout_ms"] = settings.record_lock_duration_ms
        respond(body)

    acknowledge(ctx, edge, group_id, member_id, req["topics"], settings, renew, readable, acked)
