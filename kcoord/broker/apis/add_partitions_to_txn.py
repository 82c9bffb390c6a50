"""AddPartitionsToTxn (24), v0-5. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before); v3: flexible;
v4: the batched broker form (several transactions, verify_only: KIP-890 part 1); v5: TRANSACTION_ABORTABLE.

As KafkaApis.handleAddPartitionsToTxnRequest: a transaction naming a partition this broker does not
know is answered UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED for the others, without
reaching the coordinator; otherwise the coordinator's one error goes to every partition
(errorResponseForTransaction), or, for verify_only, its error per partition. v0-3 answer the one
transaction by topic; v4+ by transaction, with a top-level error_code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.markers import OFFSETS_TOPIC
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

Partition = tuple[str, int]
_TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    if version < 4:
        transactions = [
            {
                "transactional_id": req["v3_and_below_transactional_id"],
                "producer_id": req["v3_and_below_producer_id"],
                "producer_epoch": req["v3_and_below_producer_epoch"],
                "verify_only": False,
                "topics": req["v3_and_below_topics"],
            }
        ]
    else:
        transactions = req["transactions"]
    if (
        version >= 4
        and ctx.authorizer is not None
        and not authz.cluster_allowed(ctx, meta, 24, AclOperation.CLUSTER_ACTION)
    ):  # the broker form: authorizeClusterOperation(CLUSTER_ACTION), an error for the whole request
        respond({"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results_by_transaction": []})
        return
    results: list[dict[str, Any] | None] = [None] * len(transactions)
    outstanding = len(transactions)
    if not transactions:
        respond({"error_code": ErrorCode.NONE, "results_by_transaction": []})
        return

    def answered(index: int, transactional_id: str, errors: Mapping[Partition, ErrorCode]) -> None:
        nonlocal outstanding
        results[index] = {"transactional_id": transactional_id, "topic_results": _by_topic(errors)}
        outstanding -= 1
        if outstanding:
            return
        if version < 4:
            assert results[0] is not None
            respond({"results_by_topic_v3_and_below": results[0]["topic_results"]})
        else:
            respond({"error_code": ErrorCode.NONE, "results_by_transaction": results})

    for index, txn in enumerate(transactions):
        _one(ctx, meta, txn, lambda errors, i=index, t=str(txn["transactional_id"]): answered(i, t, errors))


def _one(ctx: ServerContext, meta: RequestMeta, txn: Request, done: Any) -> None:
    version = meta.api_version
    transactional_id = str(txn["transactional_id"])
    partitions = [(str(t["name"]), int(p)) for t in txn["topics"] for p in t["partitions"]]
    refused: dict[Partition, ErrorCode] = {}
    if version < 4 and ctx.authorizer is not None:  # a client's request: WRITE on the transactional id
        if not authz.allowed(
            ctx, meta, 24, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            done(dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            return
        refused = _unwritable(ctx, meta, partitions)
    # `__consumer_offsets` exists as Kafka's metadata cache has it (a group coordinator's v4+
    # verification in cluster mode names its partition, kcoord/cluster/txn_verify.py).
    unknown = [
        p
        for p in partitions
        if p not in refused and p[0] != OFFSETS_TOPIC and not ctx.topics.has_partition(*p)
    ]
    if unknown or refused:
        failed = {p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for p in unknown} | refused
        done({p: failed.get(p, ErrorCode.OPERATION_NOT_ATTEMPTED) for p in partitions})
        return
    producer_id, producer_epoch = int(txn["producer_id"]), int(txn["producer_epoch"])
    coordinator = ctx.transactions
    if txn["verify_only"]:
        done(coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions))
        return
    coordinator.add_partitions(
        transactional_id, producer_id, producer_epoch, partitions, version,
        lambda error: done(dict.fromkeys(partitions, error)),
    )  # fmt: skip


def _by_topic(errors: Mapping[Partition, ErrorCode]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": error})
    return [{"name": name, "results_by_partition": parts} for name, parts in topics.items()]


_INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})  # Topic.isInternal


def _unwritable(
    ctx: ServerContext, meta: RequestMeta, partitions: list[Partition]
) -> dict[Partition, ErrorCode]:
    """KafkaApis.handleAddPartitionsToTxnRequest for clients (v0-3): WRITE on each topic, internal
    topics never authorized (TOPIC_AUTHORIZATION_FAILED), before existence; any refusal fails the
    whole transaction (OPERATION_NOT_ATTEMPTED for the rest)."""
    names = {topic for topic, _ in partitions if topic not in _INTERNAL}
    writable = authz.filter_allowed(ctx, meta, 24, AclOperation.WRITE, ResourceType.TOPIC, names)
    return {p: ErrorCode.TOPIC_AUTHORIZATION_FAILED for p in partitions if p[0] not in writable}
