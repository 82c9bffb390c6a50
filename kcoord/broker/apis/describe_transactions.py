"""DescribeTransactions (65), v0 (flexible): each transactional id's state, producer id and epoch, timeout,
start time and partitions (KIP-664); an unknown id is TRANSACTIONAL_ID_NOT_FOUND
(TransactionCoordinator.handleDescribeTransactions).

With an authorizer (KafkaApis.handleDescribeTransactionsRequest): DESCRIBE on each transactional id,
else TRANSACTIONAL_ID_AUTHORIZATION_FAILED with only the id; only the topics the caller may DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.coordinator.transactions import TransactionDescription
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

_DESCRIBE_TRANSACTIONS = 65


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    ids = [str(t) for t in req["transactional_ids"]]
    if ctx.authorizer is None:
        respond({"transaction_states": [_state(d) for d in ctx.transactions.describe_transactions(ids)]})
        return
    tid_type, describe = ResourceType.TRANSACTIONAL_ID, AclOperation.DESCRIBE
    allowed = [t for t in ids if authz.allowed(ctx, meta, _DESCRIBE_TRANSACTIONS, describe, tid_type, t)]
    described = iter(ctx.transactions.describe_transactions(allowed))
    states = []
    for tid in ids:
        if tid not in allowed:
            denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            states.append(
                {"transactional_id": tid, "error_code": denied, "transaction_state": "", "topics": []}
            )
            continue
        state = _state(next(described))
        state["topics"] = [
            t
            for t in state["topics"]
            if authz.allowed(ctx, meta, _DESCRIBE_TRANSACTIONS, describe, ResourceType.TOPIC, t["topic"])
        ]
        states.append(state)
    respond({"transaction_states": states})


def _state(d: TransactionDescription) -> dict[str, Any]:
    return {
        "error_code": d.error,
        "transactional_id": d.transactional_id,
        "transaction_state": d.transaction_state,
        "transaction_timeout_ms": d.transaction_timeout_ms,
        "transaction_start_time_ms": d.transaction_start_time_ms,
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "topics": [{"topic": topic, "partitions": list(parts)} for topic, parts in d.topics],
    }
