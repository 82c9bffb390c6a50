"""DescribeGroups (15), v0-6. v1: throttle_time_ms; v3: authorized operations; v4: group_instance_id;
v5: flexible; v6: GROUP_ID_NOT_FOUND and error_message (KIP-1043).

Typed at the door: the group logic gets the group ids and returns one `GroupDescription` each; the
version-dependent response is built here. A missing group comes back GROUP_ID_NOT_FOUND; v0-5
answer it as Kafka does for them, NONE in state Dead.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups import GroupDescription
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]

INT32_MIN = -(2**31)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    include_ops = bool(req.get("include_authorized_operations"))
    group_ids = [str(g) for g in req.get("groups") or ()]
    if ctx.authorizer is not None:
        respond({"groups": _describe_authorized(ctx, meta, group_ids, include_ops)})
        return
    # AuthHelper.authorizedOperations without an authorizer: every operation a group supports (3400 in
    # Kafka 4.3: READ, DELETE, DESCRIBE and the two config operations), the same for every group
    ops = authz.authorized_operations(ctx, meta, ResourceType.GROUP, "") if include_ops else INT32_MIN
    described = ctx.manager.describe_groups(group_ids)
    respond({"groups": [_entry(d, version, ops) for d in described]})


def _describe_authorized(
    ctx: ServerContext, meta: RequestMeta, group_ids: list[str], include_ops: bool
) -> list[dict[str, Any]]:
    """KafkaApis.handleDescribeGroupsRequest: DESCRIBE on each group (refused ones first, as
    GROUP_AUTHORIZATION_FAILED with only the id), authorized operations from the ACLs (v3+)."""
    version = meta.api_version
    refused: list[dict[str, Any]] = []
    allowed: list[str] = []
    for group_id in group_ids:
        if authz.allowed(ctx, meta, 15, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            allowed.append(group_id)
        else:  # DescribeGroupsResponse.groupError: the id and the code, state "" and no members
            refused.append(_described(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, "", "", "", []))
            if version >= 6:
                refused[-1]["error_message"] = None
    entries = refused
    for d in ctx.manager.describe_groups(allowed):
        ops = INT32_MIN
        if include_ops:
            ops = authz.authorized_operations(ctx, meta, ResourceType.GROUP, d.group_id)
        entries.append(_entry(d, version, ops))
    return entries


def _entry(d: GroupDescription, version: int, ops: int) -> dict[str, Any]:
    missing = d.error is ErrorCode.GROUP_ID_NOT_FOUND
    if d.error is not ErrorCode.NONE and (version >= 6 or not missing):
        # GroupMetadataManager.describeGroups: a missing group is Dead in every version; a
        # coordinator-level error (GroupCoordinatorService) sets only the id and the code.
        entry = _described(d.group_id, d.error, d.state if missing else "", "", "", [])
        if version >= 6:
            entry["error_message"] = d.message or (
                f"Group {d.group_id} not found." if missing else d.error.name
            )
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
