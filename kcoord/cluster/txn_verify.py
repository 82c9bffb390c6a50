"""TxnOffsetCommit for a transaction another node coordinates (KIP-890 verification across nodes).

Before a group coordinator writes a transaction's offsets it checks that the transaction has the
group's `__consumer_offsets` partition (v0-4: AddPartitionsToTxn v4 `verify_only`; v5, transactions
V2: the partition is added). Kafka's group coordinator broker asks the transaction coordinator over
the wire (AddPartitionsToTxnManager); a single kcoord asks its own TransactionCoordinator. In a
cluster the transactional id's shard may live on another node: the edge then sends that node
AddPartitionsToTxn (v4 verify only, or v5 to add), and runs the plain handler with the answer in
place of the local check. An unreachable coordinator is COORDINATOR_NOT_AVAILABLE (retriable), as
Kafka maps the manager's network errors.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.broker.faults import error_body
from kcoord.broker.markers import OFFSETS_TOPIC
from kcoord.cluster.markers import call
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.ownership import ShardState
from kcoord.cluster.shards import shard_of
from kcoord.protocol.errors import ErrorCode

__all__ = ["verified_remotely"]

_TXN_OFFSET_COMMIT, _ADD_PARTITIONS = 28, 24
Partition = tuple[str, int]


class _Verified:
    """The transaction coordinator as the plain handler sees it once the owner answered NONE."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def verify_partitions(self, tid: str, pid: int, epoch: int, partitions: Sequence[Partition]) -> Any:
        return dict.fromkeys(partitions, ErrorCode.NONE)

    def add_partitions_implicit(
        self,
        tid: str,
        pid: int,
        epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[ErrorCode], None],
    ) -> None:
        done(ErrorCode.NONE)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def verified_remotely(
    plain: Handler, state_of: Callable[[int], ShardState], view: Callable[[], ClusterView], num_shards: int
) -> Handler:
    """TxnOffsetCommit: verify with the transactional id's owner when it is another node."""

    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        txn_shard = shard_of(str(req["transactional_id"]), num_shards)
        if (
            state_of(txn_shard) is ShardState.ACTIVE
            or not ctx.config.transaction_partition_verification_enable
        ):
            plain(ctx, req, meta, respond)
            return
        owner = view().owner(txn_shard)
        if owner is None:
            respond(
                error_body(
                    _TXN_OFFSET_COMMIT, meta.api_version, req, int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                )
            )
            return
        host, port = owner.endpoint(meta.listener_name)
        asyncio.get_running_loop().create_task(
            _verify(ctx, req, meta, respond, plain, host, port, num_shards)
        )

    return handle


async def _verify(
    ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, plain: Handler,
    host: str, port: int, num_shards: int,
) -> None:  # fmt: skip
    version = meta.api_version
    add = version >= 5 and ctx.config.transaction_version >= 2
    shard = shard_of(str(req["group_id"]), num_shards)
    body = {"transactions": [{
        "transactional_id": req["transactional_id"], "producer_id": req["producer_id"],
        "producer_epoch": req["producer_epoch"], "verify_only": not add,
        "topics": [{"name": OFFSETS_TOPIC, "partitions": [shard]}],
    }]}  # fmt: skip
    try:
        answer = await call(host, port, _ADD_PARTITIONS, 5 if add else 4, body)
        error = _error_of(answer)
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError):
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error is not ErrorCode.NONE:
        respond(error_body(_TXN_OFFSET_COMMIT, version, req, int(_mapped(error, version))))
        return
    plain(dataclasses.replace(ctx, transactions=_Verified(ctx.transactions)), req, meta, respond)  # type: ignore[arg-type]


def _error_of(answer: dict[str, Any]) -> ErrorCode:
    if answer.get("error_code"):
        return ErrorCode(answer["error_code"])
    for txn in answer["results_by_transaction"]:
        for topic in txn["topic_results"]:
            for part in topic["results_by_partition"]:
                if part["partition_error_code"]:
                    return ErrorCode(part["partition_error_code"])
    return ErrorCode.NONE


def _mapped(error: ErrorCode, version: int) -> ErrorCode:
    """txn_offset_commit._verified's mapping of the coordinator's answer for the client's version."""
    if error in (
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error is ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        return ErrorCode.INVALID_TXN_STATE
    return error
