"""ConsumerGroupHeartbeat (68), v0-1, flexible (KIP-848). v1: SubscribedTopicRegex, and the client
generates its member id (KIP-1082).

Typed at the door: the group logic takes a `HeartbeatRequest` (None for each field the member left
unchanged, as on the wire) and answers a `HeartbeatAnswer` now or once its records are durable.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.consumer.heartbeat import HeartbeatAnswer, HeartbeatRequest
from kcoord.coordinator.groups.consumer.model import Assignment
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle", "response_assignment"]


def response_assignment(assignment: Assignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": topic_id, "partitions": sorted(partitions)}
            for topic_id, partitions in sorted(assignment.items(), key=lambda item: str(item[0]))
        ]
    }


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    names = req["subscribed_topic_names"]
    if ctx.authorizer is not None and (refused := _refused(ctx, meta, req["group_id"], names)) is not None:
        respond(
            {"error_code": int(refused)}
        )  # ConsumerGroupHeartbeatRequest.getErrorResponse: the code alone
        return
    owned = req["topic_partitions"]
    request = HeartbeatRequest(
        group_id=req["group_id"],
        member_id=req["member_id"],
        member_epoch=req["member_epoch"],
        instance_id=req["instance_id"],
        rack_id=req["rack_id"],
        rebalance_timeout_ms=req["rebalance_timeout_ms"],
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=req["subscribed_topic_regex"],
        server_assignor=req["server_assignor"],
        owned=None if owned is None else [(tp["topic_id"], tp["partitions"]) for tp in owned],
        client_id=meta.client_id,
        client_host=meta.client_host,
        version=meta.api_version,
        describable=None if ctx.authorizer is None else authz.topic_describable(ctx, meta),
    )

    def answer(a: HeartbeatAnswer) -> None:
        respond(
            {
                "error_code": int(a.error),
                "error_message": a.message,
                "member_id": a.member_id,
                "member_epoch": a.member_epoch,
                "heartbeat_interval_ms": a.heartbeat_interval_ms,
                "assignment": None if a.assignment is None else response_assignment(a.assignment),
            }
        )

    ctx.manager.consumer.heartbeat(request, answer)


def _refused(
    ctx: ServerContext, meta: RequestMeta, group_id: str, names: list[str] | None
) -> ErrorCode | None:
    """KafkaApis.handleConsumerGroupHeartbeat: READ on the group; and, as Kafka 4.0 does (KAFKA-18813,
    newer than the local Kafka mirror), DESCRIBE on every subscribed topic name, else
    TOPIC_AUTHORIZATION_FAILED for the request. Topics a regex matches are not refused here but
    filtered where the group resolves the regex (`authz.topic_describable`, docs/compat.md)."""
    if not authz.allowed(ctx, meta, 68, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if names:
        describable = authz.filter_allowed(ctx, meta, 68, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        if len(describable) < len(set(names)):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None
