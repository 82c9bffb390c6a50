"""TxnOffsetCommit (28), v0-5. v2: committed_leader_epoch; v3: generation_id, member_id,
group_instance_id (KIP-447) and flexible; v4: TRANSACTION_ABORTABLE (KIP-890 part 1); v5: Transactions
V2 (the group's offsets partition is added to the transaction implicitly, KIP-890 part 2).

As KafkaApis.handleTxnOffsetCommitRequest: partitions of unknown topics (or partition indexes) are
UNKNOWN_TOPIC_OR_PARTITION here, the rest goes to the group coordinator typed, and both answers are
merged; below v2 COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE. Before the write,
GroupCoordinatorService.commitTransactionalOffsets verifies the transaction through
CoordinatorRuntime.scheduleTransactionalWriteOperation: the group's `__consumer_offsets` partition must
be in the producer's transaction (AddOffsetsToTxn added it), else TRANSACTION_ABORTABLE (below v4:
INVALID_TXN_STATE); a fenced producer is INVALID_PRODUCER_EPOCH; a coordinator busy with a transition
is COORDINATOR_NOT_AVAILABLE, which the client retries (GroupCoordinatorService.handleOperationException
maps NOT_ENOUGH_REPLICAS so). The transaction's coordinator answers through `ctx.verification`: this
node's, or in cluster mode the owner of the transactional id's shard (kcoord/broker/verification.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import has_partition
from kcoord.broker.verification import TxnAnswers, TxnCheck
from kcoord.coordinator.groups.txn_offset_api import TxnCommitRequest, TxnPartition
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.coordinator.transactions import offsets_partition_for
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

Answer = list[tuple[str, int, ErrorCode]]
_BUSY = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    known: list[TxnPartition] = []
    answer: Answer = []
    readable: set[str] | None = None
    if ctx.authorizer is not None:
        whole, readable = _authorized(ctx, req, meta)
        if whole is not None:  # TxnOffsetCommitRequest.getErrorResponse: the error for every partition
            respond({"topics": _topics([(str(t["name"]), int(p["partition_index"]), whole)
                                        for t in req["topics"] for p in t["partitions"]])})  # fmt: skip
            return
    for topic in req["topics"]:
        name = str(topic["name"])
        for p in topic["partitions"]:
            index = int(p["partition_index"])
            if readable is not None and name not in readable:
                answer.append((name, index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if not has_partition(ctx.topics, ctx.data.offsets, name, index):
                answer.append((name, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            epoch = int(p["committed_leader_epoch"])
            known.append(
                TxnPartition(name, index, int(p["committed_offset"]), epoch, p["committed_metadata"])
            )

    def finish(group_answer: Answer) -> None:
        rows = answer + group_answer
        if version < 2:
            rows = [(t, p, _v0_1(e)) for t, p, e in rows]
        respond({"topics": _topics(rows)})

    if not known:
        finish([])
        return
    request = TxnCommitRequest(
        transactional_id=str(req["transactional_id"]),
        group_id=str(req["group_id"]),
        producer_id=int(req["producer_id"]),
        producer_epoch=int(req["producer_epoch"]),
        generation_id=int(req["generation_id"]),
        member_id=str(req["member_id"]),
        group_instance_id=req["group_instance_id"],
        partitions=known,
    )
    _verified(ctx, meta, request, lambda: ctx.manager.txn_offset_commit(request, finish), finish)


def _verified(
    ctx: ServerContext,
    meta: RequestMeta,
    request: TxnCommitRequest,
    write: Callable[[], None],
    finish: Callable[[Answer], None],
) -> None:
    """Runs `write` once the transaction has the group's offsets partition (verified, or added for V2),
    asking the transaction's coordinator through `ctx.verification` (this node's, or its owner's)."""
    if not request.group_id or not ctx.config.transaction_partition_verification_enable:
        write()  # "" is INVALID_GROUP_ID from the group coordinator, before any verification
        return
    version = meta.api_version
    check = TxnCheck(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        (offsets_partition_for(request.group_id),),
        add=version >= 5 and ctx.config.transaction_version >= 2,
    )

    def refuse(error: ErrorCode) -> None:
        error = _refusal(error, version)
        finish([(p.topic, p.partition, error) for p in request.partitions])

    def ask(txns: TxnAnswers) -> None:
        ids, partitions = (check.transactional_id, check.producer_id, check.producer_epoch), check.partitions
        if check.add:
            txns.add_partitions_implicit(
                *ids, partitions, lambda error: write() if error is ErrorCode.NONE else refuse(error)
            )
            return
        error = txns.verify_partitions(*ids, partitions)[partitions[0]]
        if error is ErrorCode.NONE:
            write()
        else:
            refuse(error)

    ctx.verification.answers(ctx.transactions, check, meta.listener_name, ask)


def _refusal(error: ErrorCode, version: int) -> ErrorCode:
    """AddPartitionsToTxnManager's mapping (CoordinatorPartitionWriter: genericError from v4), then
    GroupCoordinatorService.handleOperationException's (NOT_ENOUGH_REPLICAS -> NOT_AVAILABLE)."""
    if error in _BUSY:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error is ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        return ErrorCode.INVALID_TXN_STATE
    return error


def _v0_1(error: ErrorCode) -> ErrorCode:
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error


def _topics(rows: Answer) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, error in rows:
        topics.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


def _authorized(ctx: ServerContext, req: Request, meta: RequestMeta) -> tuple[ErrorCode | None, set[str]]:
    """KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional id, READ on the group (either
    refused: that error for the whole request), then READ on each topic, before existence."""
    tid, group_id = str(req["transactional_id"]), str(req["group_id"])
    if not authz.allowed(ctx, meta, 28, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, set()
    if not authz.allowed(ctx, meta, 28, AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, set()
    names = [str(t["name"]) for t in req["topics"]]
    return None, authz.filter_allowed(ctx, meta, 28, AclOperation.READ, ResourceType.TOPIC, names)
