"""Membership: this node's `kcoord_node` row, and the cluster as this node last saw it.

* `register()` / `renew()`: the node's row with `expires_at = now() + ttl` (PostgreSQL's clock),
  renewed every ttl / 4 by the node's loop; a node whose row expired is not live. Kafka's brokers
  heartbeat the controller and are fenced after `broker.session.timeout.ms` (KRaftConfigs.java).
* `refresh()`: one read of the live nodes and of every shard's live owner into `ClusterView`,
  which Metadata, DescribeCluster and FindCoordinator answer from without a database round trip.
  It also reads the nodes whose lease lapsed less than `LAPSED_LISTED_S` ago without a graceful
  stop, which Metadata keeps listing (never as a leader): see `ClusterView.lapsed`.
  The node's loop calls it every poll (500 ms) and at once on a notification on channel
  `kcoord_cluster`, which `notify()` sends after every change of a node row or a lease.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHANNEL", "LAPSED_LISTED_S", "ClusterView", "DuplicateNode", "Membership", "NodeInfo"]

log = logging.getLogger("kcoord.cluster")

CHANNEL = "kcoord_cluster"

# How long Metadata keeps listing a node whose lease lapsed (killed, paused or cut off) when it did
# not stop gracefully. librdkafka decommissions a broker that leaves Metadata and fails the requests
# in flight to it as not persisted (rdkafka_request.c, rd_kafka_err_action: _DESTROY_BROKER ->
# MSG_NOT_PERSISTED); an idempotent producer then bumps its epoch and sends again what a paused node
# had already stored, a duplicate (chaos run, stop 42). Listed, the broker stays: the request is
# answered when the node resumes, or times out after the client's request.timeout.ms (30 s by
# default) as possibly persisted and is retried with its sequence, which the new leader recognises.
# Kafka lists only unfenced brokers (KRaftMetadataCache.getAliveBrokerNodes): docs/compat.md.
LAPSED_LISTED_S = 60

_REGISTER = """
INSERT INTO kcoord_node (node_id, host, port, rack, endpoints, expires_at)
VALUES ($1, $2, $3, $4, $5::jsonb, now() + $6::integer * interval '1 millisecond')
ON CONFLICT (node_id) DO UPDATE
   SET host = excluded.host, port = excluded.port, rack = excluded.rack, endpoints = excluded.endpoints,
       expires_at = excluded.expires_at
 WHERE kcoord_node.expires_at <= now() OR $7
    OR (kcoord_node.host, kcoord_node.port) = (excluded.host, excluded.port)
"""
_RENEW = """
UPDATE kcoord_node SET expires_at = now() + $2::integer * interval '1 millisecond' WHERE node_id = $1
"""
# A graceful stop: the row expires before the lapsed-listing window, so no node routes to this one
# any more and Metadata stops listing it at once.
_LEAVE = f"""
UPDATE kcoord_node SET expires_at = now() - interval '{LAPSED_LISTED_S + 1} seconds' WHERE node_id = $1
"""
_NODES = f"""
SELECT node_id, host, port, rack, endpoints::text AS endpoints, expires_at > now() AS live
  FROM kcoord_node WHERE expires_at > now() - interval '{LAPSED_LISTED_S} seconds' ORDER BY node_id
"""
_OWNERS = """
SELECT shard, CASE WHEN owner IS NOT NULL AND expires_at > now() THEN owner END AS owner
  FROM kcoord_shard_lease ORDER BY shard
"""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A live node and its advertised endpoint per listener name (the first listener's in host/port)."""

    node_id: int
    host: str
    port: int
    rack: str | None
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)

    def endpoint(self, listener: str) -> tuple[str, int]:
        """Where a client on `listener` reaches this node (Kafka: the same listener name on every
        broker); the node's default endpoint if it has no such listener."""
        return self.endpoints.get(listener, (self.host, self.port))


@dataclass(slots=True)
class ClusterView:
    """The live nodes and each shard's live owner, as of the last refresh; `lapsed` the nodes whose
    lease ran out less than LAPSED_LISTED_S ago without a graceful stop (listed by Metadata only)."""

    nodes: dict[int, NodeInfo] = field(default_factory=dict)
    owners: dict[int, int | None] = field(default_factory=dict)
    lapsed: dict[int, NodeInfo] = field(default_factory=dict)

    def live(self) -> list[NodeInfo]:
        return [self.nodes[n] for n in sorted(self.nodes)]

    def controller_id(self) -> int:
        """The lowest live node id (-1 when none is live)."""
        return min(self.nodes, default=-1)

    def owner(self, shard: int) -> NodeInfo | None:
        """The shard's owner if its lease is live and the owner is a live node."""
        node_id = self.owners.get(shard)
        return None if node_id is None else self.nodes.get(node_id)


class DuplicateNode(OSError):
    """Another live process registered this node id (an OSError: startup reports it and exits 1)."""


class Membership:
    """This node's registration and the cached `ClusterView`, over an asyncpg pool."""

    def __init__(
        self,
        pool: Any,
        node: NodeInfo,
        ttl_ms: int,
    ) -> None:
        self._pool = pool
        self.node = node
        self.ttl_ms = ttl_ms
        self.view = ClusterView()
        self._registered = False  # once registered, a re-registration (row deleted) is ours
        self.renewed_at = time.monotonic()  # registration counts as the first renewal
        self.renewals: dict[str, int] = {}  # result (ok, reregistered, failed) -> count, for /metrics

    async def register(self, *, wait_s: float | None = None) -> None:
        """Register this node. A live row of the same id at another endpoint is another process
        (Kafka refuses a duplicate broker registration until the old session expires): wait up to
        `wait_s` (default: the TTL and a second, so a restart after kill -9 gets in) for it to
        expire, then raise `DuplicateNode`. The same endpoint is this node restarted: taken at once."""
        n = self.node
        endpoints = json.dumps({name: list(hp) for name, hp in n.endpoints.items()})
        deadline = time.monotonic() + (self.ttl_ms / 1000 + 1 if wait_s is None else wait_s)
        while True:
            status = await self._pool.execute(
                _REGISTER, n.node_id, n.host, n.port, n.rack, endpoints, self.ttl_ms, self._registered
            )
            if status == "INSERT 0 1":
                break
            if time.monotonic() >= deadline:
                raise DuplicateNode(f"node id {n.node_id} is registered by another live node")
            await asyncio.sleep(0.1)
        self._registered = True
        await self.notify()

    async def renew(self) -> None:
        sent_at = time.monotonic()
        result = "failed"
        try:
            status = await self._pool.execute(_RENEW, self.node.node_id, self.ttl_ms)
            if status != "UPDATE 1":  # someone deleted the row: put it back
                await self.register()
            result = "ok" if status == "UPDATE 1" else "reregistered"
        finally:
            self.renewals[result] = self.renewals.get(result, 0) + 1
        self.renewed_at = sent_at

    def reachable(self, now: float | None = None) -> bool:
        """The node's row was renewed within the TTL: the database answers this node."""
        return (time.monotonic() if now is None else now) - self.renewed_at < self.ttl_ms / 1000

    async def leave(self) -> None:
        if not self._registered:  # never ours (e.g. refused as a duplicate): leave the row alone
            return
        await self._pool.execute(_LEAVE, self.node.node_id)
        await self.notify()

    async def notify(self) -> None:
        await self._pool.execute("SELECT pg_notify($1, $2)", CHANNEL, str(self.node.node_id))

    async def refresh(self) -> ClusterView:
        async with self._pool.acquire() as conn:
            nodes = await conn.fetch(_NODES)
            owners = await conn.fetch(_OWNERS)
        view = ClusterView(
            nodes={int(r["node_id"]): _node(r) for r in nodes if r["live"]},
            owners={int(r["shard"]): None if r["owner"] is None else int(r["owner"]) for r in owners},
            lapsed={int(r["node_id"]): _node(r) for r in nodes if not r["live"]},
        )
        if set(view.nodes) != set(self.view.nodes):
            log.info("live nodes: %s", ",".join(str(n) for n in sorted(view.nodes)) or "-")
        self.view = view
        return view


def _node(row: Any) -> NodeInfo:
    raw = json.loads(row["endpoints"] or "{}")
    endpoints = {str(name): (str(hp[0]), int(hp[1])) for name, hp in raw.items()}
    return NodeInfo(int(row["node_id"]), str(row["host"]), int(row["port"]), row["rack"], endpoints)
