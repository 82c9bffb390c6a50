"""LeaveGroup (13), v0-5. v3: batched members (KIP-345); v4: flexible; v5: reason.

Thin: the group logic (coordinator.groups.GroupManager) owns the semantics and calls `respond`
(possibly later, once the records it depends on are durable).
"""

from __future__ import annotations

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.leave_group(req, meta, respond)
