"""WriteTxnMarkers (27), v1-2 (Kafka 4 removed v0). v1: flexible; v2: each marker's transaction_version
(KIP-1228), decoded and not acted on: the markers are validated as before (docs/compat.md).

Kafka's coordinators send it to partition leaders; operators send it through Admin.abortTransaction
(kafka-transactions.sh abort, `kcoord transactions --abort`) to close a hanging transaction. As
KafkaApis.handleWriteTxnMarkersRequest: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION, every other
partition gets its COMMIT/ABORT control batch (a `__consumer_offsets` partition completes the
producer's transactional offsets in the group coordinator), and the answer waits for every marker
to be durable (acks=all). Partition errors are the partition log's (INVALID_PRODUCER_EPOCH,
TRANSACTION_COORDINATOR_FENCED) or KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.markers import Results
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    markers = req["markers"]
    if ctx.authorizer is not None and not _cluster_allowed(ctx, meta):
        # WriteTxnMarkersRequest.getErrorResponse: CLUSTER_AUTHORIZATION_FAILED for every partition
        denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        respond({"markers": [
            {"producer_id": m["producer_id"], "topics": [
                {"name": t["name"], "partitions": [{"partition_index": p, "error_code": denied}
                                                   for p in t["partition_indexes"]]}
                for t in m["topics"]]}
            for m in markers]})  # fmt: skip
        return
    answers: list[dict[str, Any] | None] = [None] * len(markers)
    outstanding = len(markers)
    if not markers:
        respond({"markers": []})
        return

    def answered(index: int, producer_id: int, results: Results) -> None:
        nonlocal outstanding
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), error in sorted(results.items()):
            topics.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
        answers[index] = {
            "producer_id": producer_id,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        }
        outstanding -= 1
        if outstanding == 0:
            respond({"markers": answers})

    for index, marker in enumerate(markers):
        producer_id = int(marker["producer_id"])
        partitions = [(str(t["name"]), int(p)) for t in marker["topics"] for p in t["partition_indexes"]]
        ctx.markers.write(
            producer_id,
            int(marker["producer_epoch"]),
            bool(marker["transaction_result"]),
            int(marker["coordinator_epoch"]),
            partitions,
            partial(answered, index, producer_id),
        )


def _cluster_allowed(ctx: ServerContext, meta: RequestMeta) -> bool:
    """KafkaApis.handleWriteTxnMarkersRequest: ALTER on the cluster (not a denial if missing), else
    CLUSTER_ACTION (Admin.abortTransaction's callers hold one of them)."""
    authorizer = ctx.authorizer
    assert authorizer is not None
    if authorizer.authorize(
        meta.principal, meta.client_host, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        return True
    return authz.cluster_allowed(ctx, meta, 27, AclOperation.CLUSTER_ACTION)
