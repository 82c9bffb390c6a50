"""DescribeTransactions (65), v0 (flexible): each transactional id's state, producer id and epoch, timeout,
start time and partitions (KIP-664); an unknown id is TRANSACTIONAL_ID_NOT_FOUND
(TransactionCoordinator.handleDescribeTransactions)."""

from __future__ import annotations

from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    described = ctx.transactions.describe_transactions([str(t) for t in req["transactional_ids"]])
    respond(
        {
            "transaction_states": [
                {
                    "error_code": d.error,
                    "transactional_id": d.transactional_id,
                    "transaction_state": d.transaction_state,
                    "transaction_timeout_ms": d.transaction_timeout_ms,
                    "transaction_start_time_ms": d.transaction_start_time_ms,
                    "producer_id": d.producer_id,
                    "producer_epoch": d.producer_epoch,
                    "topics": [{"topic": topic, "partitions": list(parts)} for topic, parts in d.topics],
                }
                for d in described
            ]
        }
    )
