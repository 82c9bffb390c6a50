"""ShareGroupHeartbeat (76), v1, flexible (KIP-932).

Typed at the door: the group logic takes a `ShareHeartbeatRequest` and answers a
`ShareHeartbeatAnswer` now or once its records are durable (coordinator/groups/share/).
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.apis.consumer_group_heartbeat import response_assignment
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.share.heartbeat import ShareHeartbeatAnswer, ShareHeartbeatRequest
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["MAX_MEMBER_ID_LENGTH", "handle"]

MAX_MEMBER_ID_LENGTH = 36  # Uuid.randomUuid().toString(), what the clients send


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    names = req["subscribed_topic_names"]
    if ctx.authorizer is not None and (refused := _refused(ctx, meta, req["group_id"], names)) is not None:
        respond({"error_code": int(refused)})  # ShareGroupHeartbeatRequest.getErrorResponse
        return
    if not 0 < len(req["member_id"]) <= MAX_MEMBER_ID_LENGTH:
        # Kafka 4.3 answers an empty member id, or one longer than a UUID's 36 characters, with
        # INVALID_REQUEST and the code alone (seen on the oracle, tests/oracle/test_share_groups.py),
        # before GroupCoordinatorService's own "MemberId can't be empty." that a blank one gets (the
        # client generates its member id, KIP-1082).
        respond({"error_code": int(ErrorCode.INVALID_REQUEST)})
        return
    request = ShareHeartbeatRequest(
        group_id=req["group_id"],
        member_id=req["member_id"],
        member_epoch=req["member_epoch"],
        rack_id=req["rack_id"],
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=meta.client_id,
        client_host=meta.client_host,
    )

    def answer(a: ShareHeartbeatAnswer) -> None:
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

    ctx.manager.share.heartbeat(request, answer)


def _refused(
    ctx: ServerContext, meta: RequestMeta, group_id: str, names: list[str] | None
) -> ErrorCode | None:
    """KafkaApis.handleShareGroupHeartbeat: READ on the group, then DESCRIBE on every subscribed
    topic name (TOPIC_AUTHORIZATION_FAILED for the request otherwise)."""
    if not authz.allowed(ctx, meta, 76, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if names:
        describable = authz.filter_allowed(ctx, meta, 76, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        if len(describable) < len(set(names)):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None
