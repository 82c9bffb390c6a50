"""InitProducerId (22), v0-5. v2: flexible; v3: producer_id/producer_epoch (KIP-360).

Without a transactional id Kafka always hands out a new producer id with epoch 0, whatever id and
epoch the request names (`TransactionCoordinator.handleInitProducerId`); ids come from durable blocks
(`coordinator/producer_ids.py`), so the answer waits only when a new block must be written. kcoord has
no transaction coordinator: a transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
the non-retriable code Kafka gives a transactional id the client may not use (docs/compat.md).
A failed block write answers COORDINATOR_NOT_AVAILABLE, which producers retry.
"""

from __future__ import annotations

from coordinator.server.context import Request, RequestMeta, Respond, ServerContext
from protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if req["transactional_id"] is not None:
        respond(_answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1))
        return

    def allocated(producer_id: int | None, error: BaseException | None) -> None:
        if producer_id is None:
            respond(_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1))
        else:
            respond(_answer(ErrorCode.NONE, producer_id, 0))

    ctx.producer_ids.allocate(allocated)


def _answer(error: ErrorCode, producer_id: int, producer_epoch: int) -> dict[str, object]:
    return {"error_code": error, "producer_id": producer_id, "producer_epoch": producer_epoch}
