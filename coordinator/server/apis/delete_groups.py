"""DeleteGroups (42), v0-2. v2: flexible. NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND per group.

Typed at the door: the group logic gets the distinct group ids, deduplicated here in first-seen
order as Kafka's KafkaApis.handleDeleteGroupsRequest does before the coordinator sees them, and
answers (group id, error) pairs once the tombstones are durable; this module builds the response.
"""

from __future__ import annotations

from coordinator.groups.errors import ErrorCode
from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    group_ids = list(dict.fromkeys(str(g) for g in req.get("groups_names") or ()))

    def answer(results: list[tuple[str, ErrorCode]]) -> None:
        respond({"results": [{"group_id": g, "error_code": int(e)} for g, e in results]})

    ctx.manager.delete_groups(group_ids, answer)
