"""EndTxn (26), v0-5. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before); v3: flexible; v5: Transactions
V2 (KIP-890 part 2): the epoch is bumped at every end and the answer carries the producer id and epoch
for the next transaction.

Answered once the PrepareCommit/PrepareAbort record is durable; the markers follow (the coordinator).
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.coordinator.transactions import EndTxnResult
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version

    def answer(result: EndTxnResult) -> None:
        body: dict[str, object] = {"error_code": result.error}
        if version >= 5:
            body["producer_id"] = result.producer_id
            body["producer_epoch"] = result.producer_epoch
        respond(body)

    # KafkaApis.handleEndTxnRequest: WRITE on the transactional id (the id and epoch stay -1)
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, 26, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, str(req["transactional_id"])
    ):
        respond({"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
        return
    ctx.transactions.end_txn(
        str(req["transactional_id"]),
        int(req["producer_id"]),
        int(req["producer_epoch"]),
        bool(req["committed"]),
        version,
        answer,
    )
