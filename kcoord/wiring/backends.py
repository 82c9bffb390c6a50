"""Where the durable state lives: the port `open_state` (kcoord/wiring/app_state.py) opens the state through.

One `open_state(config, backends, services)` builds a single node and a cluster node alike; the
backends say where each kind of durable state is kept:

* the coordinator log every coordinator tenant appends to (groups and offsets, transactions, topics,
  producer-id blocks, ACLs, SCRAM credentials, share-partition state) and its recovery into the
  coordinators;
* the producer-id blocks;
* the partition stores behind `TopicData`, and who leads each partition;
* where the transaction coordinator's markers are written.

`LocalBackends` (kcoord/wiring/local_backends.py) keeps them in the data directory; `ClusterBackends`
(kcoord/cluster/backends.py) in PostgreSQL (the shards' logs, `kcoord_metadata`, partition leases).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kcoord.broker.markers import TxnMarkers
from kcoord.broker.security.authorizer import StandardAuthorizer
from kcoord.broker.timers import AsyncioTimers
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.acl_store import AclStore
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.metadata.scram_credentials import ScramCredentials
from kcoord.coordinator.persistence import Replayer
from kcoord.coordinator.persistence.codec import AnyRecord
from kcoord.coordinator.runtime import Clock, RecordLog, ShardPhases
from kcoord.coordinator.share_partitions import SharePartitions, ShareRecord
from kcoord.coordinator.transactions import TransactionCoordinator
from kcoord.storage.faults import FaultPolicy, StorageFault
from kcoord.wiring.metrics import MetricsSource

__all__ = ["CoordinatorLog", "Coordinators", "Recovered", "Services", "StateBackends"]

# The log every coordinator tenant appends to (`coordinator.runtime.ports.RecordLog` of every record kind).
CoordinatorLog = RecordLog[AnyRecord]


@dataclass(frozen=True, slots=True)
class Services:
    """What the process lends the state it opens: time, the metrics (None without --http-listen) and the
    action on a fatal storage fault (exit 75, kcoord/wiring/app.py)."""

    clock: Clock
    timers: AsyncioTimers
    metrics: MetricsSource | None
    on_fatal: Callable[[StorageFault], None]


@dataclass(frozen=True, slots=True)
class Coordinators:
    """The coordinators, built over one coordinator log before anything is replayed into them."""

    manager: GroupManager
    topics: TopicRegistry
    producer_ids: ProducerIds
    transactions: TransactionCoordinator
    acls: AclStore[StandardAuthorizer] | None
    credentials: ScramCredentials
    share_partitions: SharePartitions | None = None
    """The share partitions (KIP-932): every one on a single node, those of the partitions it leads on a
    cluster node."""

    def replayer(self) -> Replayer:
        """A replayer feeding each record to its owner (recovery; cluster mode's shards and metadata)."""
        return Replayer(
            self.manager,
            self.topics,
            self.producer_ids,
            self.transactions,
            acls=self.acls,
            credentials=self.credentials,
            share_partitions=self.share_partitions,
        )


@dataclass(frozen=True, slots=True)
class Recovered:
    """What recovery read: the coordinator log's handle (closed at shutdown: `storage.Log` or cluster
    mode's stand-in) and the startup line's summary of what was loaded."""

    log: Any
    summary: str


class StateBackends(Protocol):
    """Where each kind of durable state lives. `open_state` calls these in this order, once per open."""

    async def coordinator_log(self) -> CoordinatorLog:
        """The log the coordinators append to, connected but not read yet."""
        ...

    def phases(self) -> ShardPhases | None:
        """The shard phases the coordinators answer from (kcoord/coordinator/runtime/phases.py): None for
        a node that serves every key (each tenant keeps its own one-shard table), or a table of every
        shard that cluster mode's ownership moves and both coordinators share."""
        ...

    def share_log(self, record_log: CoordinatorLog, topics: TopicRegistry) -> RecordLog[ShareRecord]:
        """Where share-partition state is written: the coordinator log on a single node; in cluster
        mode PostgreSQL, fenced by each partition's leader lease (kcoord/cluster/share_state.py)."""
        ...

    def producer_ids(self, record_log: CoordinatorLog) -> ProducerIds:
        """Where producer ids come from (Kafka's ProducerIdManager: blocks allocated durably)."""
        ...

    async def recover(self, coordinators: Coordinators, policy: FaultPolicy) -> Recovered:
        """Replay what is durable into the coordinators (their `on_loaded` follows)."""
        ...

    async def topic_data(self, topics: TopicRegistry, clock: Clock, policy: FaultPolicy) -> TopicData:
        """The topics' partition stores, opened after the registry was recovered."""
        ...

    def marker_writer(self, data: TopicData, manager: GroupManager, local: TxnMarkers) -> TxnMarkers:
        """Where the transaction coordinator writes its markers (`local`: into this node's partitions)."""
        ...

    def leadership(self) -> PartitionLeadership:
        """Who leads each partition (Metadata, ElectLeaders, AlterPartitionReassignments)."""
        ...
