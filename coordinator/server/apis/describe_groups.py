"""DescribeGroups (15), v0-6. v1: throttle_time_ms; v3: authorized operations; v4: group_instance_id;
v5: flexible; v6: GROUP_ID_NOT_FOUND and error_message (KIP-1043).

Typed at the door: the group logic gets the group ids and returns one `GroupDescription` each; the
version-dependent response is built here. A missing group comes back GROUP_ID_NOT_FOUND; v0-5
answer it as Kafka does for them, NONE in state Dead.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups import GROUP_AUTHORIZED_OPERATIONS, GroupDescription
from coordinator.groups.errors import ErrorCode
from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]

INT32_MIN = -(2**31)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    ops = GROUP_AUTHORIZED_OPERATIONS if req.get("include_authorized_operations") else INT32_MIN
    described = ctx.manager.describe_groups([str(g) for g in req.get("groups") or ()])
    respond({"groups": [_entry(d, version, ops) for d in described]})


def _entry(d: GroupDescription, version: int, ops: int) -> dict[str, Any]:
    missing = d.error is ErrorCode.GROUP_ID_NOT_FOUND
    if d.error is not ErrorCode.NONE and (version >= 6 or not missing):
        # GroupMetadataManager.describeGroups: a missing group is Dead in every version; a
        # coordinator-level error (GroupCoordinatorService) sets only the id and the code.
        entry = _described(d.group_id, d.error, d.state if missing else "", "", "", [])
        if version >= 6:
            entry["error_message"] = f"Group {d.group_id} not found." if missing else d.error.name
        return entry
    members = []
    for m in d.members:
        member: dict[str, Any] = {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "member_metadata": m.metadata,
            "member_assignment": m.assignment,
        }
        if version >= 4:
            member["group_instance_id"] = m.group_instance_id
        members.append(member)
    entry = _described(d.group_id, ErrorCode.NONE, d.state, d.protocol_type, d.protocol_data, members)
    if version >= 3:
        entry["authorized_operations"] = ops
    return entry


def _described(
    group_id: str, error: ErrorCode, state: str, protocol_type: str, protocol_data: str, members: list[Any]
) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "group_id": group_id,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol_data,
        "members": members,
    }
