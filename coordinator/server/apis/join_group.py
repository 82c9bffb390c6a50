"""JoinGroup (11), v0-9. v1: rebalance_timeout_ms; v4: MEMBER_ID_REQUIRED; v5: group_instance_id; v6:
flexible; v7: protocol_type in the response; v8: reason; v9: skip_assignment.

Typed at the door: the decoded request holds every field (defaults for those its version lacks);
v0 has no rebalance timeout, for which Kafka uses the session timeout. The group logic
(coordinator.groups.GroupManager) answers through `respond`, at once or when the join phase completes.
"""

from __future__ import annotations

from coordinator.groups.join import JoinRequest
from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle", "join_request"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.join_group(join_request(req, meta, respond))


def join_request(req: Request, meta: RequestMeta, respond: Respond) -> JoinRequest:
    session = req["session_timeout_ms"]
    return JoinRequest(
        group_id=req["group_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"],
        session_timeout_ms=session,
        rebalance_timeout_ms=session if meta.api_version == 0 else req["rebalance_timeout_ms"],
        protocol_type=req["protocol_type"],
        protocols=tuple((p["name"], p["metadata"]) for p in req["protocols"]),
        reason=req["reason"],
        version=meta.api_version,
        client_id=meta.client_id,
        client_host=meta.client_host,
        respond=respond,
    )
