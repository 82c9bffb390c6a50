"""DescribeProducers (61), v0 (flexible): the active producers of partitions (KIP-664), what
kafka-transactions.sh describe-producers / find-hanging read.

As KafkaApis.handleDescribeProducersRequest and Partition.activeProducerState: an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION; otherwise every producer the partition keeps state for, with its epoch, last
sequence and timestamp, the coordinator epoch of its last marker and the start offset of its open
transaction (-1 when none).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics = []
    for topic in req["topics"]:
        name = str(topic["name"])
        # KafkaApis.handleDescribeProducersRequest: READ on the topic before its existence
        if ctx.authorizer is not None and not authz.allowed(
            ctx, meta, 61, AclOperation.READ, ResourceType.TOPIC, name
        ):
            denied = _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            topics.append(
                {
                    "name": name,
                    "partitions": [denied | {"partition_index": int(i)} for i in topic["partition_indexes"]],
                }
            )
            continue
        partitions = [_partition(ctx, name, int(index)) for index in topic["partition_indexes"]]
        topics.append({"name": name, "partitions": partitions})
    respond({"topics": topics})


def _partition(ctx: ServerContext, name: str, index: int) -> dict[str, Any]:
    plog = ctx.data.log(name, index)
    if plog is None:
        return _error(ctx.data.missing(name, index)) | {"partition_index": index}
    producers = [
        {
            "producer_id": row.producer_id,
            "producer_epoch": row.producer_epoch,
            "last_sequence": row.last_sequence,
            "last_timestamp": row.last_timestamp,
            "coordinator_epoch": row.coordinator_epoch,
            "current_txn_start_offset": row.current_txn_start_offset,
        }
        for row in plog.producer_states()
    ]
    return {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "active_producers": producers,
    }


def _error(error: ErrorCode) -> dict[str, Any]:
    """ApiError's message is the error's default one (Errors.message), as partitionError sets it."""
    return {"error_code": error, "error_message": _MESSAGES.get(error), "active_producers": []}


_MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: None,
}
