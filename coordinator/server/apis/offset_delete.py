"""OffsetDelete (47), v0 only (KIP-496); response error_code precedes throttle_time_ms.

Thin: the group logic (coordinator.groups.GroupManager) owns the semantics and calls `respond`
(possibly later, once the records it depends on are durable).
"""

from __future__ import annotations

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.offset_delete(req, meta, respond)
