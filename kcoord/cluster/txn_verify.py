"""Transaction verification across nodes (KIP-890): the remote implementation of the edge's
`TxnVerification` port (kcoord/broker/verification.py).

A partition leader checks that a transactional batch's partition is in its producer's transaction
before appending it, and a group coordinator that a transaction has the group's `__consumer_offsets`
partition before writing its offsets. Kafka's brokers ask the transaction coordinator over the wire
(`AddPartitionsToTxnManager`: AddPartitionsToTxn v4 `verify_only`, or v5, adding the partitions, under
Transactions V2). A kcoord node coordinates the transactional ids of the shards it owns: for those its
own coordinator answers, as on a single node; for the others this sends the shard's owner one
AddPartitionsToTxn for the request's partitions and hands the handler the owner's answer.

No owner, or no answer, is COORDINATOR_NOT_AVAILABLE for every partition: Produce answers it
NOT_ENOUGH_REPLICAS and TxnOffsetCommit COORDINATOR_NOT_AVAILABLE (both retriable), as Kafka maps the
manager's network errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kcoord.broker.verification import Partition, TxnAnswers, TxnCheck
from kcoord.cluster.markers import call
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.node_client import NodeClient
from kcoord.coordinator.runtime import Phase
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode

__all__ = ["OwnerAnswers", "RemoteVerification"]

_ADD_PARTITIONS = 24
log = logging.getLogger("kcoord.cluster")

_UNREACHABLE = (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError)


class OwnerAnswers:
    """The owner's answer to one AddPartitionsToTxn, asked as the local coordinator would be (a
    partition it did not answer for: COORDINATOR_NOT_AVAILABLE)."""

    __slots__ = ("_errors",)

    def __init__(self, errors: Mapping[Partition, ErrorCode]) -> None:
        self._errors = errors

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[Partition]
    ) -> dict[Partition, ErrorCode]:
        return {p: self._errors.get(p, ErrorCode.COORDINATOR_NOT_AVAILABLE) for p in partitions}

    def add_partitions_implicit(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[ErrorCode], None],
    ) -> None:
        errors = (self._errors.get(p, ErrorCode.COORDINATOR_NOT_AVAILABLE) for p in partitions)
        done(next((e for e in errors if e is not ErrorCode.NONE), ErrorCode.NONE))


class RemoteVerification:
    """`TxnVerification` of a cluster node: the local coordinator for the transactional ids of the shards
    this node serves (`state_of` ACTIVE), the owner's answer over the wire for the others."""

    def __init__(
        self,
        state_of: Callable[[int], Phase],
        view: Callable[[], ClusterView],
        num_shards: int,
        *,
        client: NodeClient | None = None,
    ) -> None:
        """`client`: how this node calls the owner, on its inter-broker listener (None: plain calls on
        the listener the request came in on)."""
        self._state_of = state_of
        self._view = view
        self._num_shards = num_shards
        self._client = client
        self._asking: set[asyncio.Task[None]] = set()

    def answers(
        self, local: TxnAnswers, check: TxnCheck, listener: str, ready: Callable[[TxnAnswers], None]
    ) -> None:
        shard = shard_of(check.transactional_id, self._num_shards)
        if self._state_of(shard) is Phase.ACTIVE:
            ready(local)
            return
        owner = self._view().owner(shard)
        if owner is None:
            ready(OwnerAnswers({}))
            return
        if self._client is not None:
            listener = self._client.listener
        task = asyncio.get_running_loop().create_task(self._ask(owner.endpoint(listener), check, ready))
        self._asking.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._asking.discard)

    async def _ask(
        self, address: tuple[str, int], check: TxnCheck, ready: Callable[[TxnAnswers], None]
    ) -> None:
        try:
            send = call if self._client is None else self._client.call
            answer = await send(*address, _ADD_PARTITIONS, 5 if check.add else 4, request_body(check))
        except _UNREACHABLE as exc:  # a refused login too (node_client.NodeAuthFailed): say why
            log.warning("verification with %s:%d failed: %r", *address, exc)
            ready(OwnerAnswers({}))
            return
        ready(OwnerAnswers(errors_of(answer, check.partitions)))


def request_body(check: TxnCheck) -> dict[str, Any]:
    """AddPartitionsToTxn v4/v5 (the broker form) for the one transaction of `check`."""
    topics: dict[str, list[int]] = {}
    for topic, index in check.partitions:
        topics.setdefault(topic, []).append(index)
    return {"transactions": [{
        "transactional_id": check.transactional_id, "producer_id": check.producer_id,
        "producer_epoch": check.producer_epoch, "verify_only": not check.add,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
    }]}  # fmt: skip


def errors_of(answer: dict[str, Any], partitions: Sequence[Partition]) -> dict[Partition, ErrorCode]:
    """Per partition, the owner's AddPartitionsToTxn answer (a request- or transaction-level error
    applies to every partition)."""
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
