"""`StateBackends` in PostgreSQL: where a cluster node's durable state lives (kcoord/wiring/backends.py).

* the coordinator log: `RoutingRecordLog`, each record to the log of the shard its key maps to
  (`Ownership`: the shards this node holds by lease) or, cluster-wide ones, to `kcoord_metadata`;
* recovery: the cluster-wide records replayed from `kcoord_metadata`; a shard's groups and
  transactions arrive when the node acquires the shard (`ShardHost.load`, kcoord/cluster/node.py);
* producer-id blocks: allocated in PostgreSQL (`ClusterProducerIds`), never twice across nodes;
* the partition stores: `ClusterPartitions`, the partitions this node leads by lease
  (`PartitionPlacement`), and their leaders for Metadata (`ClusterLeadership`);
* share-partition state: in `kcoord_share_state`, following each partition's leader (`ShareStateLog`,
  fenced by the leader's lease epoch; `ShareHosting` loads a partition's state as the node takes it);
* markers: this node's transactions write theirs through the owner of each group shard and the
  leader of each data partition (`RemoteMarkers`).

The node around the backends (`ClusterApp`) is known to them only through callables: its membership
exists once its listeners are bound, after the state is open.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from kcoord.broker.markers import TxnMarkers
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership
from kcoord.broker.topics.offsets_topic import topic_ids_of
from kcoord.cluster.leadership import ClusterLeadership
from kcoord.cluster.leases import PartitionLeases, ShardLeases
from kcoord.cluster.markers import RoutedTxnMarkers
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.metadata import ClusterProducerIds, MetadataLog
from kcoord.cluster.node_client import NodeClient
from kcoord.cluster.node_writer import NodeWriter
from kcoord.cluster.offsets_feed import OffsetsFeed
from kcoord.cluster.ownership import Ownership, ShardHost
from kcoord.cluster.partitions import ClusterPartitions
from kcoord.cluster.pg import create_pool
from kcoord.cluster.placement import PartitionPlacement
from kcoord.cluster.remote_markers import RemoteMarkers
from kcoord.cluster.routing import RoutingRecordLog
from kcoord.cluster.share_state import ShareHosting, ShareStateLog
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.persistence import Replayer
from kcoord.coordinator.runtime import Clock, Phase, RecordLog, ShardPhases
from kcoord.coordinator.share_partitions import ShareRecord
from kcoord.storage.faults import FaultPolicy
from kcoord.wiring.backends import CoordinatorLog, Coordinators, Recovered
from kcoord.wiring.config import Config

__all__ = ["POLL_S", "ClusterBackends", "NodeLinks", "OpenCluster"]

log = logging.getLogger("kcoord.cluster")

POLL_S = 0.5  # the node's poll (kcoord/cluster/node.py) and partition placement's


class NodeLinks:
    """What the backends ask of the node around them, as callables: wake its poll, the cluster as its
    membership last read it, another node's address on this node's first listener."""

    __slots__ = ("address", "client", "notify", "settle", "view")

    def __init__(
        self,
        notify: Callable[[], Awaitable[None]],
        view: Callable[[], ClusterView],
        address: Callable[[int], tuple[str, int] | None],
        client: NodeClient | None = None,
        settle: Callable[[int], Awaitable[object]] | None = None,
    ) -> None:
        self.notify = notify
        self.settle = settle
        """Wait until every live node applied metadata sequence number N (kcoord/cluster/metadata_sync.py)."""
        self.view = view
        self.address = address
        self.client = client
        """How this node calls another (its inter-broker listener and credentials); None: plain calls."""


@dataclass(frozen=True, slots=True)
class OpenCluster:
    """The backends' parts once the state is open: what the node's loops and metrics drive."""

    pool: Any
    metadata: MetadataLog
    leases: ShardLeases
    ownership: Ownership
    follower: Replayer
    partitions: ClusterPartitions
    placement: PartitionPlacement
    share_hosting: ShareHosting | None = None


class _NoLog:
    """`State.log` in cluster mode: the shards' and metadata's logs are PostgreSQL's, nothing to close."""

    segments: list[Any] = []
    compactions = 0
    pending = 0

    async def flush(self) -> None:
        return None

    async def close(self, write_snapshot: bool = True) -> None:
        return None

    def abandon(self) -> None:
        return None


class ClusterBackends:
    """A node's state in the cluster's database at `config.cluster`, its `num_shards` group shards
    loaded into and unloaded from the node's coordinators by `shards`."""

    def __init__(self, config: Config, num_shards: int, shards: ShardHost, node: NodeLinks) -> None:
        assert config.cluster is not None
        self._config = config
        self._num_shards = num_shards
        self._shards = shards
        self._node = node
        self._phases = ShardPhases(num_shards, Phase.NOT_OWNED)  # a shard is served once it is loaded
        # Set as the state opens (None before: a startup that failed early shuts down without them).
        self.pool: Any = None
        self.writer: NodeWriter | None = None
        self.metadata: MetadataLog | None = None
        self.leases: ShardLeases | None = None
        self.ownership: Ownership | None = None
        self.coordinators: Coordinators | None = None
        self.follower: Replayer | None = None
        self.partitions: ClusterPartitions | None = None
        self.placement: PartitionPlacement | None = None
        self._topics: TopicRegistry | None = None  # for the replication factors Metadata lists
        self.share_state: ShareStateLog | None = None
        self.share_hosting: ShareHosting | None = None

    def opened(self) -> OpenCluster:
        """The parts, once `open_state` has run through every step."""
        metadata, leases, ownership = self.metadata, self.leases, self.ownership
        follower, partitions, placement = self.follower, self.partitions, self.placement
        assert metadata is not None and leases is not None and ownership is not None
        assert follower is not None and partitions is not None and placement is not None
        return OpenCluster(
            self.pool, metadata, leases, ownership, follower, partitions, placement, self.share_hosting
        )

    async def coordinator_log(self) -> CoordinatorLog:
        config = self._config
        assert config.cluster is not None
        self.pool = pool = await create_pool(config.cluster, node_id=config.node_id, max_size=20)
        self.metadata = MetadataLog(pool, self._node.settle)
        self.leases = ShardLeases(pool, config.node_id, config.lease_ttl_ms)
        # One writer for the node's shards and partitions: one fenced call per flush (issue 35)
        self.writer = NodeWriter(pool)
        self.ownership = Ownership(
            pool, self.leases, self._phases, self._shards, self._node.notify, self.writer
        )
        return RoutingRecordLog(
            self._num_shards, self.ownership.log, self.metadata, self.ownership.log_failed
        )

    def phases(self) -> ShardPhases:
        """One table of shard phases: ownership moves them, both coordinators answer from them."""
        return self._phases

    def share_log(self, record_log: CoordinatorLog, topics: TopicRegistry) -> RecordLog[ShareRecord]:
        """Share-partition state follows the partition's leader: `kcoord_share_state`, fenced by its lease."""
        self.share_state = ShareStateLog(self.pool, topics.name_for_id)
        return self.share_state

    def producer_ids(self, record_log: CoordinatorLog) -> ProducerIds:
        return ClusterProducerIds(self.pool)

    async def recover(self, coordinators: Coordinators, policy: FaultPolicy) -> Recovered:
        """The cluster-wide records from `kcoord_metadata`; the follower replays later ones (the poll)."""
        assert self.metadata is not None
        config = self._config
        self.coordinators = coordinators
        self.follower = coordinators.replayer()  # never finished: shards load at any time
        count = await self.metadata.catch_up(self.follower.apply)
        log.info("cluster %s: node %d, %d shards, %d metadata records", config.cluster_id,
                 config.node_id, self._num_shards, count)  # fmt: skip
        summary = (
            f"cluster={config.cluster_id} node={config.node_id} shards={self._num_shards} metadata={count}"
        )
        return Recovered(_NoLog(), summary)

    async def topic_data(self, topics: TopicRegistry, clock: Clock, policy: FaultPolicy) -> TopicData:
        """The partitions this node leads; placement (a loop the node starts) takes and hands them over."""
        config, pool = self._config, self.pool
        # The log directory DescribeLogDirs reports (its volume's space): a broker creates its log.dirs
        # at start (LogManager.createAndValidateLogDirs); partitions are in PostgreSQL, so it stays empty.
        config.data_dir.mkdir(parents=True, exist_ok=True)
        self.partitions = partitions = ClusterPartitions(
            pool,
            PartitionLeases(pool, config.node_id, config.lease_ttl_ms),
            config.data_dir,
            lambda topic: data.partition_config(topic),
            TopicData.now_ms,
            policy,
            self.writer,
        )
        self._topics = topics
        data = TopicData(topics, partitions, config.topic_defaults())
        # `__consumer_offsets`: one partition per group shard, served where the shard is owned
        # built when first read, as a single node's: until then commits pay nothing for it (issue 35)
        feed = OffsetsFeed(self._num_shards)
        data.offsets = feed.view
        data.offsets.topic_ids = topic_ids_of(topics)
        assert self.ownership is not None
        self.ownership.offsets = feed
        self.share_hosting = self._share_hosting(topics, partitions)
        self.placement = PartitionPlacement(
            pool,
            config.node_id,
            partitions,
            lambda: [(t.name, p) for t in topics.all() for p in range(t.num_partitions)],
            poll_ms=int(POLL_S * 1000),
        )
        return data

    def _share_hosting(self, topics: TopicRegistry, partitions: ClusterPartitions) -> ShareHosting | None:
        """The share partitions of the partitions this node leads, loaded as it takes them."""
        shares = None if self.coordinators is None else self.coordinators.share_partitions
        if shares is None or self.share_state is None:
            return None

        def led() -> dict[tuple[str, int], int]:
            return {key: epoch for key, epoch in partitions.held().items() if partitions.leads(key)}

        def topic_id_of(topic: str) -> UUID | None:
            found = topics.describe(topic)
            return None if found is None else found[0]

        return ShareHosting(self.share_state, shares, led, topic_id_of)

    def marker_writer(self, data: TopicData, manager: GroupManager, local: TxnMarkers) -> TxnMarkers:
        """This node's transactions: a group shard owned elsewhere gets its markers there, a data
        partition led elsewhere its leader."""
        assert self.ownership is not None and self.placement is not None
        client = self._node.client
        listener = self._config.resolved_listeners()[0].name if client is None else client.listener
        routed = RoutedTxnMarkers(data, manager, self.ownership.state, self._node.view, listener, client)
        return RemoteMarkers(
            data, manager, self._config.node_id, self.placement.leader, self._node.address, routed, client
        )

    def leadership(self) -> PartitionLeadership:
        assert self.placement is not None
        topics = self._topics

        def replication_factor(topic: str) -> int:
            record = None if topics is None else topics.get(topic)
            return 1 if record is None else record.replication_factor

        return ClusterLeadership(self.pool, self.placement, self._shard_owner, replication_factor)

    def _shard_owner(self, shard: int) -> int | None:
        """The node owning the shard as the membership last read it (this node for its own)."""
        assert self.ownership is not None
        if self.ownership.phases.of(shard) is Phase.ACTIVE:
            return self._config.node_id
        owner = self._node.view().owner(shard)
        return None if owner is None else owner.node_id
