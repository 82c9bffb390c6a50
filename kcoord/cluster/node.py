"""`kcoord serve --cluster DSN --node-id N [--lease-ttl-ms MS]`: a node of a cluster.

The node is the single-node `App` with its durable state in PostgreSQL (`ClusterBackends`,
kcoord/cluster/backends.py, given to the one `open_state`): one GroupManager and one
TransactionCoordinator as on a single node, whose appends go through `RoutingRecordLog` to the shards
this node owns (`Ownership`) and to `kcoord_metadata`. Two background loops run beside the listener:

* renewal, every ttl / 4: the node's row and every held shard lease (a lost lease unloads at once);
* the poll, every 500 ms or at once on a notification: the live nodes and the lease owners
  (`Membership.refresh`) and shard placement (`Ownership.reconcile`);
* the metadata follower (`MetadataSync.run`), at once on a `kcoord_metadata` notification or every
  500 ms: the cluster-wide records written by other nodes (`MetadataLog.catch_up`), the new
  partitions this node prefers, then an acknowledgement, which the writer awaits before it answers
  (read-your-writes on every live node, kcoord/cluster/metadata_sync.py).

Topics' partitions live in PostgreSQL too (migration 3): each has one leader node by lease
(`PartitionPlacement`, a third loop), the data plane serves the partitions this node leads
(`ClusterPartitions` behind `TopicData`), Metadata reports each partition's leader
(`ClusterLeadership`) and Produce / Fetch / ListOffsets for a partition led elsewhere answer
NOT_LEADER_OR_FOLLOWER, so clients follow the leader. Groups, offsets, transactions and partitions
are shared by the cluster.

Startup checks: the DSN must connect, the schema must be this kcoord's (`kcoord cluster init`),
and the cluster id comes from the database (`kcoord_cluster`): one line on stderr and exit 1 if not.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from kcoord import storage
from kcoord.broker.context import ServerContext
from kcoord.broker.middleware import Middleware
from kcoord.cluster import node_client
from kcoord.cluster.backends import POLL_S, ClusterBackends, NodeLinks
from kcoord.cluster.cluster_metrics import ClusterCollector, ClusterSources
from kcoord.cluster.edge import ClusterRouting
from kcoord.cluster.membership import CHANNEL, ClusterView, Membership, NodeInfo
from kcoord.cluster.metadata import METADATA_CHANNEL
from kcoord.cluster.metadata_sync import ACK_CHANNEL, MetadataSync
from kcoord.cluster.pg import COMMAND_TIMEOUT_S, CONNECT_ERRORS, connect, redact
from kcoord.cluster.schema import SCHEMA_VERSION, read_cluster, schema_version
from kcoord.cluster.share_migration import SHARE_CHANNEL
from kcoord.cluster.share_offsets import ShareOffsetsView
from kcoord.cluster.txn_verify import RemoteVerification
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.persistence import Replayer
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.wiring.app import App, run
from kcoord.wiring.backends import Coordinators
from kcoord.wiring.config import Config

__all__ = ["ClusterApp", "StartupError", "check_cluster", "serve"]

log = logging.getLogger("kcoord.cluster")


class StartupError(Exception):
    """Why a node cannot join the cluster (one line)."""


async def check_cluster(dsn: str) -> tuple[str, int]:
    """The cluster's (id, shard count) if `dsn` reaches an initialized cluster this kcoord knows."""
    where = redact(dsn)
    try:
        conn = await connect(dsn)
    except CONNECT_ERRORS as exc:
        raise StartupError(f"cannot connect to {where}: {_one_line(exc)}") from None
    try:
        version = await schema_version(conn)
        if version == 0:
            raise StartupError(f"{where} has no kcoord schema: run `kcoord cluster init --cluster DSN` first")
        if version != SCHEMA_VERSION:
            raise StartupError(
                f"{where} has schema version {version}, this kcoord needs {SCHEMA_VERSION}: "
                "run `kcoord cluster init` with the newer of the two"
            )
        stored = await read_cluster(conn)
        if stored is None:
            raise StartupError(f"{where} holds no cluster row: run `kcoord cluster init --cluster DSN`")
        return stored
    except CONNECT_ERRORS as exc:
        raise StartupError(f"{where}: {_one_line(exc)}") from None
    finally:
        await conn.close()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def serve(config: Config) -> int:
    """Check the cluster, then run the node until SIGTERM/SIGINT; the exit code."""
    assert config.cluster is not None
    try:
        node_client.check(config)
    except ValueError as exc:
        print(f"kcoord serve --cluster: {exc}", file=sys.stderr)
        return 1
    try:
        cluster_id, num_shards = asyncio.run(check_cluster(config.cluster))
    except StartupError as exc:
        print(f"kcoord serve --cluster: {exc}", file=sys.stderr)
        return 1
    if config.cluster_id not in ("kcoord", cluster_id):
        print(
            f"kcoord serve --cluster: this node is configured for cluster {config.cluster_id}, "
            f"the database holds {cluster_id}",
            file=sys.stderr,
        )
        return 1
    config = dataclasses.replace(config, cluster_id=cluster_id)
    return run(config, lambda c: ClusterApp(c, num_shards))


class _Shards:
    """`ShardHost`: a shard's records replayed into the node's coordinators, and dropped again."""

    def __init__(self, app: ClusterApp) -> None:
        self._app = app

    def _belongs(self, shard: int) -> Any:
        n = self._app.num_shards
        return lambda key: shard_of(key, n) == shard

    def replay(self, shard: int) -> Callable[[storage.Record], None]:
        return self._app.replayer().apply

    def loaded(self, shard: int) -> None:
        app = self._app
        app.manager.shard_loaded(self._belongs(shard))
        app.transactions.shard_loaded(self._belongs(shard))

    def unload(self, shard: int) -> None:
        self._app.manager.unload(self._belongs(shard))
        self._app.transactions.unload(self._belongs(shard))


class _Brokers:
    """`server.context.Brokers` from the membership's view; this node is always among them."""

    def __init__(self, membership: Membership) -> None:
        self._membership = membership

    def brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        return self._entries(self._membership.view.nodes, listener)

    def listed(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        view = self._membership.view
        return self._entries({**view.lapsed, **view.nodes}, listener)

    def _entries(self, found: dict[int, NodeInfo], listener: str) -> list[tuple[int, str, int, str | None]]:
        nodes = dict(found)
        me = self._membership.node
        nodes.setdefault(me.node_id, me)
        return [(n.node_id, *n.endpoint(listener), n.rack) for _, n in sorted(nodes.items())]

    def controller_id(self) -> int:
        return min([*self._membership.view.nodes, self._membership.node.node_id])

    def ready(self) -> tuple[bool, str]:
        if self._membership.reachable():
            return True, ""
        return False, "the cluster's database has not answered within the lease TTL"


class ClusterApp(App):
    """A node: the single-node App with its durable state in PostgreSQL (kcoord/cluster/backends.py)."""

    def __init__(self, config: Config, num_shards: int) -> None:
        super().__init__(config)
        self.num_shards = num_shards
        self._client = node_client.node_client(config)
        self._listener = self._client.listener  # the inter-broker listener: other nodes' addresses on it
        links = NodeLinks(
            self._notify, lambda: self.membership.view, self._node_address, self._client, self._settle
        )
        self.cluster = ClusterBackends(config, num_shards, _Shards(self), links)
        self._listen_conn: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._sync: MetadataSync | None = None

    # -- startup: App.startup opens the state through backends(), then binds (and context_built) ----
    def backends(self) -> ClusterBackends:
        return self.cluster

    def _coordinators(self) -> Coordinators:
        assert self.cluster.coordinators is not None, "a shard loaded before the state was open"
        return self.cluster.coordinators

    @property
    def manager(self) -> GroupManager:
        return self._coordinators().manager

    @property
    def transactions(self) -> TransactionCoordinator:
        return self._coordinators().transactions

    def replayer(self) -> Replayer:
        """A replayer into this node's coordinators (never finished: shards load at any time)."""
        return self._coordinators().replayer()

    def middlewares(self) -> list[Middleware]:
        """The coordinator APIs routed by shard, FindCoordinator from the view (kcoord/cluster/edge.py)."""
        cluster = self.cluster.opened()
        routing = ClusterRouting(cluster.ownership.state, self._view, self.num_shards)
        return [*super().middlewares(), routing, ShareOffsetsView(cluster.pool)]  # share state: PostgreSQL

    async def context_built(self, ctx: ServerContext) -> None:
        """Verify transactions with their owners, list the live nodes, register and start the loops."""
        cluster = self.cluster.opened()
        node = NodeInfo(
            self.config.node_id, ctx.advertised.host, ctx.advertised.port, None,
            {name: (hp.host, hp.port) for name, hp in ctx.endpoints.items()},
        )  # fmt: skip
        self.membership = Membership(cluster.pool, node, self.config.lease_ttl_ms)
        ctx.brokers = _Brokers(self.membership)
        ctx.verification = RemoteVerification(
            cluster.ownership.state, self._view, self.num_shards, client=self._client
        )
        if self.metrics is not None:  # /metrics (App._start_http registers it after startup)
            self.metrics.extra.append(ClusterCollector(self._metric_sources()))
        self._sync = MetadataSync(
            cluster.pool, self.config.node_id, self._catch_up, self._take_new_partitions, self._listening,
            bound_s=self.config.lease_ttl_ms / 1000 + 2 * POLL_S, poll_s=POLL_S,
        )  # fmt: skip
        await self.membership.register()
        await self._listen_for_changes()
        await self.membership.refresh()
        self._tasks = [
            asyncio.create_task(self._renew_loop(), name="kcoord-cluster-renew"),
            asyncio.create_task(self._poll_loop(), name="kcoord-cluster-poll"),
            asyncio.create_task(cluster.placement.run(), name="kcoord-cluster-partitions"),
            asyncio.create_task(self._sync.run(lambda: self._stopping), name="kcoord-cluster-metadata"),
        ]
        if cluster.share_hosting is not None:  # share-partition state follows the partitions' leaders
            hosting = cluster.share_hosting.run(lambda: self._stopping)
            self._tasks.append(asyncio.create_task(hosting, name="kcoord-cluster-share-state"))

    def _metric_sources(self) -> ClusterSources:
        cluster = self.cluster.opened()
        partitions = cluster.partitions
        shard_leases, partition_leases = cluster.leases, partitions.leases
        return ClusterSources(
            shard_states=cluster.ownership.owned,
            partitions_led=lambda: len(partitions.held()),
            renewals=lambda: {
                "node": self.membership.renewals,
                "shard": shard_leases.renewals,
                "partition": partition_leases.renewals,
            },
            acquisitions=lambda: {
                "shard": shard_leases.acquisitions,
                "partition": partition_leases.acquisitions,
            },
            reachable=self.membership.reachable,
        )

    async def _listen_for_changes(self) -> None:
        assert self.config.cluster is not None
        try:
            self._listen_conn = None
            self._listen_conn = await connect(
                self.config.cluster, node_id=self.config.node_id, command_timeout_s=COMMAND_TIMEOUT_S
            )
            await self._listen_conn.add_listener(CHANNEL, lambda *_: self._wake.set())
            if self._sync is not None:
                await self._listen_conn.add_listener(METADATA_CHANNEL, self._sync.on_change)
                await self._listen_conn.add_listener(ACK_CHANNEL, self._sync.on_ack)
            if self.cluster.share_hosting is not None:  # a share partition reset by its group's coordinator
                await self._listen_conn.add_listener(SHARE_CHANNEL, self.cluster.share_hosting.on_notify)
        except CONNECT_ERRORS as exc:  # the poll still sees every change, only later
            log.warning("LISTEN failed, polling only: %s", _one_line(exc))
            if self._listen_conn is not None:  # half set up: dropped, so the next poll tries again
                self._listen_conn.terminate()
                self._listen_conn = None

    def _view(self) -> ClusterView:
        """The cluster as last read while the database answers this node; nothing known once it has
        not within the TTL (cut off): FindCoordinator then answers COORDINATOR_NOT_AVAILABLE, so
        clients ask another node, instead of naming a stale owner (often this node, fenced)."""
        return self.membership.view if self.membership.reachable() else ClusterView()

    def _node_address(self, node_id: int) -> tuple[str, int] | None:
        node = self.membership.view.nodes.get(node_id) if hasattr(self, "membership") else None
        return None if node is None else node.endpoint(self._listener)

    async def _notify(self) -> None:
        await self.membership.notify()

    async def _catch_up(self) -> tuple[int, int]:
        cluster = self.cluster.opened()  # each time: a test-control reset opens new parts
        rows = await cluster.metadata.catch_up(cluster.follower.apply)
        return rows, cluster.metadata.last_seq

    async def _take_new_partitions(self) -> None:
        await self.cluster.opened().placement.settle()

    def _listening(self) -> bool:
        return self._listen_conn is not None and not self._listen_conn.is_closed()

    async def _settle(self, seq: int) -> float:
        """Before a metadata write is answered: every live node has it (none before the node's loops run)."""
        return 0.0 if self._sync is None or not self._tasks else await self._sync.wait_acked(seq)

    # -- the loops -------------------------------------------------------------------------------
    async def _renew_loop(self) -> None:
        period = self.config.lease_ttl_ms / 4000
        while not self._stopping:
            started = time.monotonic()
            ownership = self.cluster.opened().ownership  # each round: a test-control reset opens a new one
            for renew in (ownership.renew, self.membership.renew):  # each on its own: the shards'
                try:  # self-fence check runs even when the database is away
                    await renew()
                except Exception as exc:  # the database is away: the leases run out, shards fence
                    log.warning("lease renewal failed: %s", _one_line(exc))
            await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))

    async def _poll_loop(self) -> None:
        while not self._stopping:
            cluster = self.cluster.opened()  # each round: a test-control reset opens new parts
            try:
                if self._listen_conn is None or self._listen_conn.is_closed():  # e.g. the database restarted
                    await self._listen_for_changes()
                view = await self.membership.refresh()
                await cluster.ownership.reconcile(view)
            except Exception as exc:
                log.warning("cluster poll failed: %s", _one_line(exc))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)

    # -- shutdown --------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop accepting, hand every shard over (drain, release), leave, then the App's shutdown."""
        self._stopping = True
        cluster = self.cluster
        if cluster.placement is not None:
            cluster.placement.stop()
        for server in self.servers:
            server.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if cluster.pool is not None and cluster.ownership is not None:
            try:
                await cluster.ownership.release_all()
                if hasattr(self, "membership"):
                    await self.membership.leave()
            except Exception as exc:
                log.warning("handover at shutdown failed: %s", _one_line(exc))
        await super().shutdown()
        if self._listen_conn is not None:
            await self._listen_conn.close()
        if cluster.pool is not None:
            await cluster.pool.close()
