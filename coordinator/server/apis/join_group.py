"""JoinGroup (11), v0-9. v1: rebalance_timeout_ms; v4: MEMBER_ID_REQUIRED; v5: group_instance_id; v6:
flexible; v7: protocol_type in the response; v8: reason; v9: skip_assignment.

Thin: the group logic (coordinator.groups.GroupManager) owns the semantics and calls `respond`
(possibly later, once the records it depends on are durable).
"""

from __future__ import annotations

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.join_group(req, meta, respond)
