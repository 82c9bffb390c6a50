"""DeleteGroups (42), v0-2. v2: flexible. NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND per group.

Typed at the door: the group logic gets the distinct group ids, deduplicated here in first-seen
order as Kafka's KafkaApis.handleDeleteGroupsRequest does before the coordinator sees them, and
answers (group id, error) pairs once the tombstones are durable; this module builds the response.
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    group_ids = list(dict.fromkeys(str(g) for g in req.get("groups_names") or ()))
    refused: list[tuple[str, ErrorCode]] = []
    if ctx.authorizer is not None:  # KafkaApis.handleDeleteGroupsRequest: DELETE on each group
        ok = authz.filter_allowed(ctx, meta, 42, AclOperation.DELETE, ResourceType.GROUP, group_ids)
        refused = [(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in group_ids if g not in ok]
        group_ids = [g for g in group_ids if g in ok]

    def answer(results: list[tuple[str, ErrorCode]]) -> None:
        # the refused groups after the coordinator's results, as Kafka adds them
        respond({"results": [{"group_id": g, "error_code": int(e)} for g, e in [*results, *refused]]})

    ctx.manager.delete_groups(group_ids, answer)
