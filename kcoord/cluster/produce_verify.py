"""Produce of transactional records whose transaction another node coordinates (KIP-890 part 1 across
nodes).

A partition leader checks that a transactional batch's partition is in its producer's transaction
before appending it (`produce.py`). Kafka's leader asks the transaction coordinator over the wire
(`ReplicaManager.appendRecords` -> `AddPartitionsToTxnManager`: AddPartitionsToTxn v4 `verify_only`,
or with transactions V2 the partitions are added). In a cluster the transactional id's shard may be
owned by another node: this wrapper sends that node AddPartitionsToTxn for the request's partitions
(v4 verify only; v5 adding them for Produce v12+ under transaction.version 2) and runs the plain
handler with the answer in place of the local check, as `txn_verify.py` does for TxnOffsetCommit.
No owner or no answer is COORDINATOR_NOT_AVAILABLE per partition, which Produce answers
NOT_ENOUGH_REPLICAS (retriable), as Kafka maps the manager's errors.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.broker.context import Handler, Request, RequestMeta, Respond, ServerContext
from kcoord.cluster.markers import call
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.ownership import ShardState
from kcoord.cluster.shards import shard_of
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import BATCH_HEADER, read_header

__all__ = ["produce_verified_remotely"]

_ADD_PARTITIONS = 24
Partition = tuple[str, int]


class _Answered:
    """The transaction coordinator as the plain Produce handler sees it: the owner's answer."""

    def __init__(self, inner: Any, errors: dict[Partition, ErrorCode]) -> None:
        self._inner = inner
        self._errors = errors

    def verify_partitions(
        self, tid: str, pid: int, epoch: int, partitions: Sequence[Partition]
    ) -> dict[Partition, ErrorCode]:
        return {p: self._errors.get(p, ErrorCode.COORDINATOR_NOT_AVAILABLE) for p in partitions}

    def add_partitions_implicit(
        self,
        tid: str,
        pid: int,
        epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[ErrorCode], None],
    ) -> None:
        done(next((self._errors[p] for p in partitions if self._errors.get(p)), ErrorCode.NONE))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _transactional(req: Request) -> tuple[int, int, list[Partition]] | None:
    """(producer id, producer epoch, partitions) of a request carrying transactional batches."""
    found = None
    partitions: list[Partition] = []
    for topic in req["topic_data"]:
        for part in topic["partition_data"]:
            partitions.append((str(topic["name"]), int(part["index"])))
            records = part["records"]
            if found is None and records and len(records) >= BATCH_HEADER.size:
                header = read_header(records)
                if header.is_transactional and header.producer_id >= 0:
                    found = (header.producer_id, header.producer_epoch)
    return None if found is None else (*found, partitions)


def produce_verified_remotely(
    plain: Handler, state_of: Callable[[int], ShardState], view: Callable[[], ClusterView], num_shards: int
) -> Handler:
    def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
        tid = req["transactional_id"] if meta.api_version >= 3 else None
        found = None if tid is None else _transactional(req)
        if found is None or not ctx.config.transaction_partition_verification_enable:
            plain(ctx, req, meta, respond)
            return
        shard = shard_of(str(tid), num_shards)
        if state_of(shard) is ShardState.ACTIVE:
            plain(ctx, req, meta, respond)
            return
        owner = view().owner(shard)
        if owner is None:
            _run(ctx, req, meta, respond, plain, {})
            return
        host, port = owner.endpoint(meta.listener_name)
        asyncio.get_running_loop().create_task(
            _verify(ctx, req, meta, respond, plain, (host, port), str(tid), found)
        )

    return handle


async def _verify(
    ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, plain: Handler,
    address: tuple[str, int], tid: str, found: tuple[int, int, list[Partition]],
) -> None:  # fmt: skip
    producer_id, producer_epoch, partitions = found
    add = meta.api_version >= 12 and ctx.config.transaction_version >= 2
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    body = {"transactions": [{
        "transactional_id": tid, "producer_id": producer_id, "producer_epoch": producer_epoch,
        "verify_only": not add, "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
    }]}  # fmt: skip
    try:
        answer = await call(*address, _ADD_PARTITIONS, 5 if add else 4, body)
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError):
        _run(ctx, req, meta, respond, plain, {})
        return
    _run(ctx, req, meta, respond, plain, _errors(answer, partitions))


def _errors(answer: dict[str, Any], partitions: list[Partition]) -> dict[Partition, ErrorCode]:
    if answer.get("error_code"):
        return dict.fromkeys(partitions, ErrorCode(answer["error_code"]))
    errors: dict[Partition, ErrorCode] = {}
    for txn in answer["results_by_transaction"]:
        if txn.get("error_code"):
            return dict.fromkeys(partitions, ErrorCode(txn["error_code"]))
        for topic in txn["topic_results"]:
            for part in topic["results_by_partition"]:
                errors[(str(topic["name"]), int(part["partition_index"]))] = ErrorCode(
                    part["partition_error_code"]
                )
    return errors


def _run(
    ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, plain: Handler,
    errors: dict[Partition, ErrorCode],
) -> None:  # fmt: skip
    """The plain handler, with `errors` (missing: COORDINATOR_NOT_AVAILABLE) as the coordinator's answer."""
    plain(dataclasses.replace(ctx, transactions=_Answered(ctx.transactions, errors)), req, meta, respond)  # type: ignore[arg-type]
