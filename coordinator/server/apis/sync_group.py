"""SyncGroup (14), v0-5. v1: throttle_time_ms; v3: group_instance_id; v4: flexible; v5:
protocol_type/protocol_name.

Thin: the group logic (coordinator.groups.GroupManager) owns the semantics and calls `respond`
(possibly later, once the records it depends on are durable).
"""

from __future__ import annotations

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.sync_group(req, meta, respond)
