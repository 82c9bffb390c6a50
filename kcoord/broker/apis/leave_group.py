"""LeaveGroup (13), v0-5. v3: batched members (KIP-345); v4: flexible; v5: reason.

Typed at the door: v0-2 carry one MemberId, read here as a one-entry batch (as Kafka's
LeaveGroupRequest does); the group logic answers the group error and one result per member at once,
and this module shapes them for the version.
"""

from __future__ import annotations

from collections.abc import Iterable

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle", "leave_response"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    # KafkaApis.handleLeaveGroupRequest: READ on the group; the error alone, no member results.
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, 13, AclOperation.READ, ResourceType.GROUP, req["group_id"]
    ):
        respond(leave_response(version, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return
    if version < 3:
        members: list[tuple[str, str | None]] = [(req["member_id"], None)]
    else:
        members = [(m["member_id"], m["group_instance_id"]) for m in req["members"]]
    error, results = ctx.manager.leave_group(req["group_id"], members)
    respond(leave_response(version, error, results))


def leave_response(
    version: int, error: ErrorCode, members: Iterable[tuple[str, str | None, ErrorCode]] = ()
) -> dict[str, object]:
    """v3+: per-member results; v0-2: the top-level error, else the first member error (Kafka's
    LeaveGroupResponse conversion for old versions)."""
    entries = list(members)
    if version >= 3:
        return {
            "error_code": int(error),
            "members": [
                {"member_id": m, "group_instance_id": iid, "error_code": int(e)} for m, iid, e in entries
            ],
        }
    if error == ErrorCode.NONE:
        error = next((e for _, _, e in entries if e != ErrorCode.NONE), ErrorCode.NONE)
    return {"error_code": int(error)}
