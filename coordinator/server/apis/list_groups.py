"""ListGroups (16), v0-5. v1: throttle_time_ms; v3: flexible; v4: states_filter; v5: types_filter.

Typed at the door: the filters the version carries go to the group logic as lower-case sets (Kafka
matches states and types case-insensitively); its listing comes back as values and the
version-dependent response is built here.
"""

from __future__ import annotations

from typing import Any

from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    states = {str(s).lower() for s in req.get("states_filter") or ()} if version >= 4 else set()
    types = {str(t).lower() for t in req.get("types_filter") or ()} if version >= 5 else set()
    error, listed = ctx.manager.list_groups(states, types)
    groups = []
    for group in listed:
        entry: dict[str, Any] = {"group_id": group.group_id, "protocol_type": group.protocol_type}
        if version >= 4:
            entry["group_state"] = group.state.value
        if version >= 5:
            entry["group_type"] = group.group_type
        groups.append(entry)
    respond({"error_code": int(error), "groups": groups})
