"""ListTransactions (66), v0-2 (flexible). v1: duration_filter (KIP-994); v2: transactional_id_pattern
(Kafka 4.1, KIP-1152: a Java regular expression matched against the whole id).

What kafka-transactions.sh list and Admin.listTransactions read (KIP-664), answered by the transaction
coordinator: unknown state names come back in unknown_state_filters.
"""

from __future__ import annotations

import re

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    pattern_text = req["transactional_id_pattern"]
    try:
        pattern = None if not pattern_text else re.compile(str(pattern_text))
    except re.error:
        # TransactionCoordinator.handleListTransactions: an unparsable pattern is INVALID_REGULAR_EXPRESSION
        respond({"error_code": ErrorCode.INVALID_REGULAR_EXPRESSION, "unknown_state_filters": [],
                 "transaction_states": []})  # fmt: skip
        return
    result = ctx.transactions.list_transactions(
        [str(s) for s in req["state_filters"]],
        [int(p) for p in req["producer_id_filters"]],
        int(req["duration_filter"]),
    )
    states = [
        {
            "transactional_id": t.transactional_id,
            "producer_id": t.producer_id,
            "transaction_state": t.transaction_state,
        }
        for t in result.transaction_states
        if pattern is None or pattern.fullmatch(t.transactional_id)
    ]
    if ctx.authorizer is not None:  # KafkaApis.handleListTransactionsRequest: describable ids only
        tid_type, describe = ResourceType.TRANSACTIONAL_ID, AclOperation.DESCRIBE
        states = [
            s for s in states if authz.allowed(ctx, meta, 66, describe, tid_type, str(s["transactional_id"]))
        ]
    respond(
        {
            "error_code": result.error,
            "unknown_state_filters": list(result.unknown_state_filters),
            "transaction_states": states,
        }
    )
