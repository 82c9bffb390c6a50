"""Heartbeat (12), v0-4. v1: throttle_time_ms; v3: group_instance_id; v4: flexible.

Typed at the door: the group logic (coordinator.groups.GroupManager) takes the four fields and
answers the error at once; the decoded request holds every field (defaults for those its version
lacks), so no version branching is needed here.
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle", "heartbeat_response"]


def heartbeat_response(error: int) -> dict[str, object]:
    return {"error_code": int(error)}


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    # KafkaApis.handleHeartbeatRequest: READ on the group first.
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, 12, AclOperation.READ, ResourceType.GROUP, req["group_id"]
    ):
        respond({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
        return
    error = ctx.manager.heartbeat(
        req["group_id"], req["generation_id"], req["member_id"], req["group_instance_id"]
    )
    respond({"error_code": int(error)})  # heartbeat_response, inlined: the hottest request
