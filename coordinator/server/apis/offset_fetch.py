"""OffsetFetch (9), v0-9. v2: null topics = all, top-level error_code; v5: leader epoch; v6: flexible; v7:
require_stable; v8: batched groups (KIP-709).

Thin: the group logic (coordinator.groups.GroupManager) owns the semantics and calls `respond`
(possibly later, once the records it depends on are durable).
"""

from __future__ import annotations

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.manager.offset_fetch(req, meta, respond)
