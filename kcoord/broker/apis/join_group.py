"""JoinGroup (11), v0-9. v1: rebalance_timeout_ms; v4: MEMBER_ID_REQUIRED; v5: group_instance_id; v6:
flexible; v7: protocol_type in the response; v8: reason; v9: skip_assignment.

Typed at the door: the decoded request holds every field (defaults for those its version lacks);
v0 has no rebalance timeout, for which Kafka uses the session timeout. The group logic
(coordinator.groups.GroupManager) answers through `respond`, at once or when the join phase completes.
"""

from __future__ import annotations

from collections.abc import Callable

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.join import JoinRequest
from kcoord.coordinator.groups.responses import JoinAnswer, JoinMember, join_error
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle", "join_body", "join_request"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    # KafkaApis.handleJoinGroupRequest: READ on the group before the coordinator sees it.
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, 11, AclOperation.READ, ResourceType.GROUP, req["group_id"]
    ):
        respond(join_body(version, join_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
        return

    def answer(join: JoinAnswer) -> None:
        respond(join_body(version, join))

    # A classic member joining a consumer group recomputes its target, and kcoord resolves the
    # group's regexes live then: with the joiner's DESCRIBE decisions, never unfiltered (Kafka
    # resolves them at its refreshes, with the triggering heartbeat's context: docs/compat.md).
    describable = None if ctx.authorizer is None else authz.topic_describable(ctx, meta)
    ctx.manager.join_group(join_request(req, meta, answer, describable))


def join_request(
    req: Request,
    meta: RequestMeta,
    respond: Callable[[JoinAnswer], None],
    describable: Callable[[str], bool] | None = None,
) -> JoinRequest:
    session = req["session_timeout_ms"]
    return JoinRequest(
        group_id=req["group_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"],
        session_timeout_ms=session,
        rebalance_timeout_ms=session if meta.api_version == 0 else req["rebalance_timeout_ms"],
        protocol_type=req["protocol_type"],
        protocols=tuple((p["name"], p["metadata"]) for p in req["protocols"]),
        reason=req["reason"],
        version=meta.api_version,
        client_id=meta.client_id,
        client_host=meta.client_host,
        respond=respond,
        describable=describable,
    )


def join_body(version: int, answer: JoinAnswer) -> dict[str, object]:
    """The response for the request's version: ProtocolName is non-nullable before v7 (Kafka sends
    "" there); ProtocolType from v7, SkipAssignment from v9, member instance ids from v5."""
    body: dict[str, object] = {
        "error_code": int(answer.error),
        "generation_id": answer.generation_id,
        "protocol_name": answer.protocol_name if version >= 7 else (answer.protocol_name or ""),
        "leader": answer.leader,
        "member_id": answer.member_id,
        "members": [_member(version, m) for m in answer.members],
    }
    if version >= 7:
        body["protocol_type"] = answer.protocol_type
    if version >= 9:
        body["skip_assignment"] = answer.skip_assignment
    return body


def _member(version: int, m: JoinMember) -> dict[str, object]:
    entry: dict[str, object] = {"member_id": m.member_id, "metadata": m.metadata}
    if version >= 5:
        entry["group_instance_id"] = m.group_instance_id
    return entry
