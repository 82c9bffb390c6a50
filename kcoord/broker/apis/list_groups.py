"""ListGroups (16), v0-5. v1: throttle_time_ms; v3: flexible; v4: states_filter; v5: types_filter.

Typed at the door: the filters the version carries go to the group logic as lower-case sets (Kafka
matches states and types case-insensitively); its listing comes back as values and the
version-dependent response is built here.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups import GroupListing
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    states = {str(s).lower() for s in req.get("states_filter") or ()} if version >= 4 else set()
    types = {str(t).lower() for t in req.get("types_filter") or ()} if version >= 5 else set()
    error, listed = ctx.manager.list_groups(states, types)
    if ctx.authorizer is not None:
        listed = _describable(ctx, meta, listed)
    groups = []
    for group in listed:
        entry: dict[str, Any] = {"group_id": group.group_id, "protocol_type": group.protocol_type}
        if version >= 4:
            entry["group_state"] = group.state.value
        if version >= 5:
            entry["group_type"] = group.group_type
        groups.append(entry)
    respond({"error_code": int(error), "groups": groups})


def _describable(ctx: ServerContext, meta: RequestMeta, listed: list[GroupListing]) -> list[GroupListing]:
    """KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists every group; otherwise only
    the groups the caller may DESCRIBE (filtering, not denials: logIfDenied=false)."""
    authorizer = ctx.authorizer
    assert authorizer is not None
    principal, host = meta.principal, meta.client_host
    if authorizer.authorize(principal, host, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return listed
    return [
        g for g in listed
        if authorizer.authorize(principal, host, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
    ]  # fmt: skip
