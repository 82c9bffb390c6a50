"""AddOffsetsToTxn (25), v0-4. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before); v3: flexible.

Adds the group's `__consumer_offsets` partition to the transaction (KafkaApis.handleAddOffsetsToTxnRequest:
partitionFor(groupId)); the offsets themselves come with TxnOffsetCommit, to the group coordinator.
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if ctx.authorizer is not None:
        # KafkaApis.handleAddOffsetsToTxnRequest: WRITE on the transactional id, then READ on the group
        tid, group_id = str(req["transactional_id"]), str(req["group_id"])
        if not authz.allowed(ctx, meta, 25, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
            respond({"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
            return
        if not authz.allowed(ctx, meta, 25, AclOperation.READ, ResourceType.GROUP, group_id):
            respond({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            return
    ctx.transactions.add_offsets(
        str(req["transactional_id"]),
        int(req["producer_id"]),
        int(req["producer_epoch"]),
        str(req["group_id"]),
        meta.api_version,
        lambda error: respond({"error_code": error}),
    )
