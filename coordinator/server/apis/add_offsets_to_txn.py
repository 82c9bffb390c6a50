"""AddOffsetsToTxn (25), v0-4. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before); v3: flexible.

Adds the group's `__consumer_offsets` partition to the transaction (KafkaApis.handleAddOffsetsToTxnRequest:
partitionFor(groupId)); the offsets themselves come with TxnOffsetCommit, to the group coordinator.
"""

from __future__ import annotations

from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ctx.transactions.add_offsets(
        str(req["transactional_id"]),
        int(req["producer_id"]),
        int(req["producer_epoch"]),
        str(req["group_id"]),
        meta.api_version,
        lambda error: respond({"error_code": error}),
    )
