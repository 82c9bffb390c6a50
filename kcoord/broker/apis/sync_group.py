"""SyncGroup (14), v0-5. v1: throttle_time_ms; v3: group_instance_id; v4: flexible; v5: protocol_type
and protocol_name in request and response.

Typed at the door. A v5+ request without a protocol type or name is answered
INCONSISTENT_GROUP_PROTOCOL here, before loading, group and member checks, as Kafka's
KafkaApis.handleSyncGroupRequest (areMandatoryProtocolTypeAndNamePresent) does before the
coordinator sees it. The group logic answers through the parked response, at once or once the
leader's assignment is durable.
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.member import Parked
from kcoord.coordinator.groups.responses import SyncAnswer, sync_error
from kcoord.coordinator.groups.sync import SyncRequest
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle", "sync_body"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    protocol: tuple[str, str] | None = None
    if version >= 5:
        protocol_type, protocol_name = req["protocol_type"], req["protocol_name"]
        if protocol_type is None or protocol_name is None:
            respond(sync_body(version, sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)))
            return
        protocol = (protocol_type, protocol_name)
    # KafkaApis.handleSyncGroupRequest: READ on the group, after the protocol fields' check.
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, 14, AclOperation.READ, ResourceType.GROUP, req["group_id"]
    ):
        respond(sync_body(version, sync_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
        return
    request = SyncRequest(
        group_id=req["group_id"],
        generation_id=req["generation_id"],
        member_id=req["member_id"],
        group_instance_id=req["group_instance_id"],
        protocol=protocol,
        # the last entry for a member id wins, as in Kafka's map of the leader's assignments
        assignments={entry["member_id"]: entry["assignment"] for entry in req["assignments"]},
        parked=Parked(lambda answer: respond(sync_body(version, answer)), version),
    )
    ctx.manager.sync_group(request)


def sync_body(version: int, answer: SyncAnswer) -> dict[str, object]:
    """The response for the request's version: ProtocolType and ProtocolName from v5 (null on error);
    the assignment is empty bytes on error, never null."""
    body: dict[str, object] = {"error_code": int(answer.error), "assignment": answer.assignment}
    if version >= 5:
        body["protocol_type"] = answer.protocol_type
        body["protocol_name"] = answer.protocol_name
    return body
