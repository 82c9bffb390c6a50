"""InitProducerId (22), v0-5 (v6, two-phase commit, KIP-939, is defined but unstable in Kafka 4.3 and
not advertised). v2: flexible; v3: producer_id/producer_epoch (KIP-360); v4: PRODUCER_FENCED
(INVALID_PRODUCER_EPOCH before).

Without a transactional id Kafka always hands out a new producer id with epoch 0, whatever id and
epoch the request names (`TransactionCoordinator.handleInitProducerId`); ids come from durable blocks
(`kcoord/coordinator/metadata/producer_ids.py`), so the answer waits only when a new block must be
written. With one, the transaction coordinator fences the previous epoch (aborting an open
transaction: the client retries on CONCURRENT_TRANSACTIONS) and answers once its record is durable.
"""

from __future__ import annotations

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.coordinator.transactions import InitProducerIdResult
from kcoord.protocol.errors import ErrorCode

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
    if ctx.authorizer is not None and (error := _refused(ctx, meta, transactional_id)) is not None:
        respond({"error_code": error, "producer_id": -1, "producer_epoch": -1})  # getErrorResponse
        return
    ctx.transactions.init_producer_id(
        None if transactional_id is None else str(transactional_id),
        int(req["transaction_timeout_ms"]),
        int(req["producer_id"]),
        int(req["producer_epoch"]),
        meta.api_version,
        answer,
    )


def _refused(ctx: ServerContext, meta: RequestMeta, transactional_id: str | None) -> ErrorCode | None:
    """KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id; without one IDEMPOTENT_WRITE
    on the cluster or else WRITE on some topic (authorizeByResourceType)."""
    if transactional_id is not None:
        if authz.allowed(ctx, meta, 22, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    authorizer = ctx.authorizer
    assert authorizer is not None
    idempotent = AclOperation.IDEMPOTENT_WRITE  # checked with logIfDenied=false: not a denial on its own
    if authorizer.authorize(meta.principal, meta.client_host, idempotent, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    if authz.allowed_by_resource_type(ctx, meta, 22, AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
