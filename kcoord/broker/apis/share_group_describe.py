"""ShareGroupDescribe (77), v1, flexible (KIP-932); authorized operations as Kafka 4.3 gives them
(KafkaApis.handleShareGroupDescribe).

Typed at the door: the group logic returns a `ShareGroupDescription` per id; the response is built here.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.consumer_group_describe import INT32_MIN
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.consumer.describe import NamedAssignment
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.describe import ShareGroupDescription
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]


def _assignment(named: NamedAssignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": topic_id, "topic_name": name, "partitions": list(partitions)}
            for topic_id, name, partitions in named
        ]
    }


def _error(group_id: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": INT32_MIN}  # fmt: skip


def _group(d: ShareGroupDescription, ops: int) -> dict[str, Any]:
    if d.error is not ErrorCode.NONE:
        return _error(d.group_id, d.error, d.message)
    members = [
        {
            "member_id": m.member_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": _assignment(m.assignment),
        }
        for m in d.members
    ]
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": d.group_id,
        "group_state": d.state,
        "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch,
        "assignor_name": d.assignor_name,
        "members": members,
        "authorized_operations": ops,
    }


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    include_ops = bool(req["include_authorized_operations"])
    group_ids = [str(g) for g in req["group_ids"]]
    allowed = group_ids
    groups: list[dict[str, Any]] = []
    if ctx.authorizer is not None:
        # KafkaApis.handleShareGroupDescribe: DESCRIBE on each group, the refused ones first (the id and
        # the code alone).
        allowed = [
            g for g in group_ids if authz.allowed(ctx, meta, 77, AclOperation.DESCRIBE, ResourceType.GROUP, g)
        ]
        groups = [
            _error(g, ErrorCode.GROUP_AUTHORIZATION_FAILED, None) for g in group_ids if g not in allowed
        ]
    for d in ctx.manager.share.describe(allowed):
        # Every supported operation without an authorizer (3400: Kafka 4.3 adds the config operations
        # to READ, DELETE, DESCRIBE), else what the ACLs allow (AuthHelper.authorizedOperations)
        ops = (
            authz.authorized_operations(ctx, meta, ResourceType.GROUP, d.group_id)
            if include_ops
            else INT32_MIN
        )
        groups.append(_group(d, ops))
    respond({"groups": groups})
