"""InitProducerId (22), v0-5. v2: flexible; v3: producer_id/producer_epoch (KIP-360); v4: PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before).

Without a transactional id Kafka always hands out a new producer id with epoch 0, whatever id and
epoch the request names (`TransactionCoordinator.handleInitProducerId`); ids come from durable blocks
(`coordinator/producer_ids.py`), so the answer waits only when a new block must be written. With one,
the transaction coordinator fences the previous epoch (aborting an open transaction: the client
retries on CONCURRENT_TRANSACTIONS) and answers once its record is durable.
"""

from __future__ import annotations

from coordinator.server.context import Request, RequestMeta, Respond, ServerContext
from coordinator.transactions import InitProducerIdResult

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    def answer(result: InitProducerIdResult) -> None:
        respond(
            {
                "error_code": result.error,
                "producer_id": result.producer_id,
                "producer_epoch": result.producer_epoch,
            }
        )

    transactional_id = req["transactional_id"]
    ctx.transactions.init_producer_id(
        None if transactional_id is None else str(transactional_id),
        int(req["transaction_timeout_ms"]),
        int(req["producer_id"]),
        int(req["producer_epoch"]),
        meta.api_version,
        answer,
    )
