"""Transaction markers for partitions another node leads: the transaction coordinator's marker writer
in a cluster sends WriteTxnMarkers (27) to each partition's leader, as Kafka's
`TransactionMarkerChannelManager` does (`addTxnMarkersToBrokerQueue`: grouped by leader), and writes
the rest through `inner` (`RoutedTxnMarkers`: `__consumer_offsets` partitions to their shard's
owner, the partitions this node leads locally).

A partition without a known leader, an unreachable leader or a leader that answers
NOT_LEADER_OR_FOLLOWER settles with NOT_LEADER_OR_FOLLOWER, which `CoordinatorMarkers` retries with
its backoff until the partition's leader writes the marker (Kafka's
`TransactionMarkerRequestCompletionHandler` retries on the same errors after a metadata refresh).
Only the coordinator's writer forwards: the WriteTxnMarkers handler writes locally, so a marker is
never bounced between nodes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.broker.markers import OFFSETS_TOPIC, Partition, Results, TxnMarkers
from kcoord.broker.topics.data import TopicData
from kcoord.cluster.markers import call
from kcoord.cluster.node_client import NodeClient
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.protocol.errors import ErrorCode

__all__ = ["RemoteMarkers"]

log = logging.getLogger("kcoord.cluster.markers")

API_KEY, VERSION = 27, 1  # WriteTxnMarkers v1 (flexible), as Kafka 4.0's brokers send it

Address = Callable[[int], tuple[str, int] | None]
"""A node id -> its host and port (None: not a live node)."""


class RemoteMarkers(TxnMarkers):
    def __init__(
        self,
        data: TopicData,
        groups: GroupManager,
        node_id: int,
        leader: Callable[[str, int], int],
        address: Address,
        inner: TxnMarkers | None = None,
        client: NodeClient | None = None,
    ) -> None:
        """`address`: a node's address on the listener `client` calls (None: plain `call`)."""
        super().__init__(data, groups)
        self._inner = inner
        self._call = call if client is None else client.call
        self._node_id = node_id
        self._leader = leader
        self._address = address
        self._tasks: set[asyncio.Future[Any]] = set()

    def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[Results], None],
    ) -> None:
        remote: dict[int, list[Partition]] = {}
        local: list[Partition] = []
        for partition in partitions:
            here = partition[0] == OFFSETS_TOPIC or self._data.log(*partition) is not None
            if here or self._data.missing(*partition) is not ErrorCode.NOT_LEADER_OR_FOLLOWER:
                local.append(partition)
            else:
                remote.setdefault(self._leader(*partition), []).append(partition)
        results: Results = {}
        waiting = len(remote) + (1 if local else 0)
        if not waiting:
            done(results)
            return

        def part_done(answer: Results) -> None:
            nonlocal waiting
            results.update(answer)
            waiting -= 1
            if waiting == 0:
                done(results)

        marker = (producer_id, producer_epoch, commit, coordinator_epoch)
        for node_id, parts in remote.items():
            task = asyncio.ensure_future(self._send(node_id, marker, parts))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(functools.partial(_settle, parts, part_done))
        if local:
            write = super().write if self._inner is None else self._inner.write
            write(producer_id, producer_epoch, commit, coordinator_epoch, local, part_done)

    async def _send(
        self, node_id: int, marker: tuple[int, int, bool, int], parts: list[Partition]
    ) -> Results:
        address = self._address(node_id) if node_id >= 0 and node_id != self._node_id else None
        if address is None:
            return dict.fromkeys(parts, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        producer_id, producer_epoch, commit, coordinator_epoch = marker
        topics: dict[str, list[int]] = {}
        for topic, index in parts:
            topics.setdefault(topic, []).append(index)
        body = {"markers": [{
            "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": commit,
            "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()],
            "coordinator_epoch": coordinator_epoch,
        }]}  # fmt: skip
        answer = await self._call(*address, API_KEY, VERSION, body)
        found: Results = {}
        for marker_answer in answer["markers"]:
            for topic in marker_answer["topics"]:
                for part in topic["partitions"]:
                    found[(str(topic["name"]), int(part["partition_index"]))] = ErrorCode(part["error_code"])
        return {p: found.get(p, ErrorCode.NOT_LEADER_OR_FOLLOWER) for p in parts}


def _settle(parts: list[Partition], done: Callable[[Results], None], task: asyncio.Future[Results]) -> None:
    done(_outcome(task, parts))


def _outcome(task: asyncio.Future[Results], parts: list[Partition]) -> Results:
    error = None if task.cancelled() else task.exception()
    if task.cancelled() or error is not None:
        log.warning("WriteTxnMarkers to the leader of %s failed: %r (retried)", parts, error)
        return dict.fromkeys(parts, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return task.result()
