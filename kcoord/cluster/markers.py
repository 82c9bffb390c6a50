"""Transaction markers for `__consumer_offsets` partitions another node owns.

Kafka's transaction coordinator sends WriteTxnMarkers to the leader of each partition of the
transaction (TransactionMarkerChannelManager), so the group coordinator owning the transaction's
groups completes their pending offsets. `__consumer_offsets` partition N is shard N here: the
transaction coordinator's markers for a shard this node serves are written locally
(`TxnMarkers.write`); for a shard another node owns, a WriteTxnMarkers request goes to that owner,
whose handler writes them as its own (never forwarding again). No owner, no connection, or the
owner's refusal answer a retriable error: `CoordinatorMarkers` retries, as Kafka's channel manager does.

Only the transaction coordinator's own markers go through here; a WriteTxnMarkers request a node
receives (another node's, or `kafka-transactions.sh abort`) is written locally by the plain
`TxnMarkers` of the server context. With an authorizer, the owner checks CLUSTER_ACTION on the
cluster for these requests: the node calls on its inter-broker listener with its own credentials
(`node_client.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.broker.markers import OFFSETS_TOPIC, Partition, Results, TxnMarkers
from kcoord.broker.topics.data import TopicData
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.node_client import NodeClient
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.runtime import Phase
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request

__all__ = ["RoutedTxnMarkers", "call"]

log = logging.getLogger("kcoord.cluster")

WRITE_TXN_MARKERS, VERSION = 27, 1
TIMEOUT_S = 10.0
_SIZE = struct.Struct(">i")
_ids = itertools.count(1)


async def call(host: str, port: int, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection to another node; its response body."""
    correlation_id = next(_ids)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), TIMEOUT_S)
    try:
        writer.write(encode_request(api_key, version, correlation_id, body, client_id="kcoord-node"))
        await writer.drain()
        (size,) = _SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), TIMEOUT_S))
        got, response = decode_response(api_key, version, await reader.readexactly(size))
        if got != correlation_id:
            raise ConnectionError(f"correlation id {got}, expected {correlation_id}")
        return response
    finally:
        writer.close()


class RoutedTxnMarkers(TxnMarkers):
    """The transaction coordinator's marker writer (`CoordinatorMarkers.attach`) in cluster mode."""

    def __init__(
        self,
        data: TopicData,
        groups: GroupManager,
        state_of: Callable[[int], Phase],
        view: Callable[[], ClusterView],
        listener: str,
        client: NodeClient | None = None,
    ) -> None:
        """`listener`: the one other nodes are called on; `client` calls them (None: plain `call`)."""
        super().__init__(data, groups)
        self._state_of = state_of
        self._view = view
        self._listener = listener
        self._call = call if client is None else client.call
        self._tasks: set[asyncio.Task[None]] = set()

    def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Sequence[Partition],
        done: Callable[[Results], None],
    ) -> None:
        active = Phase.ACTIVE
        remote = [p for p in partitions if p[0] == OFFSETS_TOPIC and self._state_of(p[1]) is not active]
        local = [p for p in partitions if p not in remote]
        results: Results = {}
        parts = 1 + bool(remote)

        def collect(part: Results) -> None:
            nonlocal parts
            results.update(part)
            parts -= 1
            if parts == 0:
                done(results)

        marker = {"producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": commit,
                  "coordinator_epoch": coordinator_epoch}  # fmt: skip
        if remote:
            task = asyncio.get_running_loop().create_task(self._forward(marker, remote, collect))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        super().write(producer_id, producer_epoch, commit, coordinator_epoch, local, collect)

    async def _forward(
        self, marker: dict[str, Any], partitions: list[Partition], done: Callable[[Results], None]
    ) -> None:
        by_owner: dict[int, list[int]] = {}
        results: Results = {}
        view = self._view()
        for _, shard in partitions:
            owner = view.owner(shard)
            if owner is None:
                results[(OFFSETS_TOPIC, shard)] = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                by_owner.setdefault(owner.node_id, []).append(shard)
        for node_id, shards in by_owner.items():
            host, port = view.nodes[node_id].endpoint(self._listener)
            results.update(await self._send(host, port, marker, shards))
        done(results)

    async def _send(self, host: str, port: int, marker: dict[str, Any], shards: list[int]) -> Results:
        body = {"markers": [{**marker, "topics": [{"name": OFFSETS_TOPIC, "partition_indexes": shards}]}]}
        try:
            response = await self._call(host, port, WRITE_TXN_MARKERS, VERSION, body)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError) as exc:
            log.warning("markers to %s:%d failed: %r", host, port, exc)
            return {(OFFSETS_TOPIC, s): ErrorCode.COORDINATOR_NOT_AVAILABLE for s in shards}
        results: Results = {}
        for answer in response["markers"]:
            for topic in answer["topics"]:
                for part in topic["partitions"]:
                    results[(str(topic["name"]), int(part["partition_index"]))] = ErrorCode(
                        part["error_code"]
                    )
        return results
