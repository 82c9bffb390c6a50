"""ConsumerGroupDescribe (69), v0-1, flexible (KIP-848). v1: each member's MemberType (KIP-1099).

Typed at the door: the group logic takes the group ids and returns a `ConsumerGroupDescription`
each; the response is built here.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.consumer.describe import ConsumerGroupDescription, NamedAssignment
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]

INT32_MIN = -(2**31)


def _assignment(named: NamedAssignment) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": topic_id, "topic_name": name, "partitions": list(partitions)}
            for topic_id, name, partitions in named
        ]
    }


def _group(d: ConsumerGroupDescription, ops: int, version: int) -> dict[str, Any]:
    if d.error is not ErrorCode.NONE:
        return {"error_code": int(d.error), "error_message": d.message, "group_id": d.group_id,
                "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                "members": [], "authorized_operations": INT32_MIN}  # fmt: skip
    members = []
    for m in d.members:
        member: dict[str, Any] = {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            # Kafka's ConsumerGroupMember.Builder(memberId) starts the regex at "" and only a non-null
            # one replaces it: a member that never sent one is described with "", never null.
            "subscribed_topic_regex": m.subscribed_topic_regex or "",
            "assignment": _assignment(m.assignment),
            "target_assignment": _assignment(m.target_assignment),
        }
        if version >= 1:
            member["member_type"] = m.member_type
        members.append(member)
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
    group_ids = [str(g) for g in req["group_ids"]]
    allowed, groups = group_ids, []
    if ctx.authorizer is not None:
        # KafkaApis.handleConsumerGroupDescribe: DESCRIBE on each group (refused ones first, the id and
        # the code alone).
        allowed = [
            g for g in group_ids if authz.allowed(ctx, meta, 69, AclOperation.DESCRIBE, ResourceType.GROUP, g)
        ]
        groups = [_refused(g) for g in group_ids if g not in allowed]
    for d in ctx.manager.consumer.describe(allowed):
        # AuthHelper.authorizedOperations: what the ACLs allow, or without an authorizer every operation
        # a group supports (3400 in Kafka 4.3: READ, DELETE, DESCRIBE and the two config operations)
        ops = INT32_MIN
        if req["include_authorized_operations"]:
            ops = authz.authorized_operations(ctx, meta, ResourceType.GROUP, d.group_id)
        groups.append(_group(d, ops, meta.api_version))
    respond({"groups": groups})


def _refused(group_id: str) -> dict[str, Any]:
    denied = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return {"error_code": denied, "error_message": None, "group_id": group_id, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": INT32_MIN}  # fmt: skip
