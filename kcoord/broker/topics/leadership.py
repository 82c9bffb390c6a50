"""PartitionLeadership: who leads each partition, and the admin decisions that move leadership.

The port ElectLeaders (43), AlterPartitionReassignments (45) and ListPartitionReassignments (46) call
(`kcoord/broker/apis/`). Kafka makes these decisions in the controller's
`ReplicationControlManager` (metadata/src/main/java/org/apache/kafka/controller/): `electLeader`,
`alterPartitionReassignment` with `validateManualPartitionAssignment`, `listPartitionReassignments`.
Today `SingleNodeLeadership` answers as that controller does for a one-broker cluster; cluster mode
(issue 27) implements the same protocol with partition leases in PostgreSQL, where `elect` and
`reassign` move a lease and so answer through `on_done` once it is written.

Callers check that every partition they pass exists first (the controller answers
UNKNOWN_TOPIC_OR_PARTITION before it looks at leadership); the topic registry decides existence.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from kcoord.protocol.errors import ErrorCode

__all__ = [
    "NO_ERROR",
    "Done",
    "ElectionType",
    "Outcome",
    "PartitionLeadership",
    "Reassignment",
    "Replicas",
    "SingleNodeLeadership",
    "TopicPartition",
    "partition_replicas",
    "validate_replicas",
]


class ElectionType(enum.IntEnum):
    """Kafka's org.apache.kafka.common.ElectionType (ElectLeaders v1+ election_type)."""

    PREFERRED = 0
    """Make the first replica (the preferred one) leader, if it is in sync."""
    UNCLEAN = 1
    """Only for a partition without a leader: any live replica, in sync or not (KIP-460)."""


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """Kafka's ApiError: the error code a partition gets and the message sent with it (None: none)."""

    error: ErrorCode
    message: str | None = None


NO_ERROR: Final = Outcome(ErrorCode.NONE)  # ApiError.NONE: no message
# ApiError(Errors.ELECTION_NOT_NEEDED) carries the code's default message.
ELECTION_NOT_NEEDED: Final = Outcome(
    ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
)
# NoReassignmentInProgressException(NO_REASSIGNMENT_IN_PROGRESS.message()): ApiError.fromThrowable drops a
# message equal to the code's default, so none is sent.
NO_REASSIGNMENT_IN_PROGRESS: Final = Outcome(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)


@dataclass(frozen=True, slots=True)
class Reassignment:
    """An ongoing reassignment (ListPartitionReassignments' OngoingPartitionReassignment)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


Done = Callable[[dict[TopicPartition, Outcome]], None]
"""Called once with one outcome per partition passed in (maybe synchronously, inside the call)."""


class PartitionLeadership(Protocol):
    def leader(self, topic: str, partition: int) -> int:
        """The node id that leads the partition."""
        ...

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch as Metadata reports it (-1: unknown): 0 on a single node, the
        lease epoch in a cluster (kcoord/partition_log/epochs.py)."""
        ...

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """The partition's replicas as Metadata lists them, the leader first when there is one: this
        node on a single node; in a cluster as many live nodes as the topic's replication factor (each
        can take the partition over, its data being in PostgreSQL), or the reassignment's list."""
        ...

    def in_sync_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """The replicas in sync (ISR): those that are live, since every write is durable in the one
        store before it is acknowledged; what acks=all checks against min.insync.replicas."""
        ...

    def elect(self, election_type: ElectionType, partitions: Sequence[TopicPartition], on_done: Done) -> None:
        """ReplicationControlManager.electLeader for each partition: ELECTION_NOT_NEEDED when the
        preferred replica leads (PREFERRED) or any leader exists (UNCLEAN), else elects or answers
        PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE."""
        ...

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int] | None], on_done: Done) -> None:
        """ReplicationControlManager.alterPartitionReassignment for each partition: a replica list
        starts (or completes) a move after `validate_replicas`; None cancels the ongoing one
        (NO_REASSIGNMENT_IN_PROGRESS if there is none)."""
        ...

    def reassignments(self) -> Mapping[TopicPartition, Reassignment]:
        """Every ongoing reassignment (ReplicationControlManager.listPartitionReassignments)."""
        ...

    def assign_created(
        self, replicas: Mapping[TopicPartition, Sequence[int]], on_done: Callable[[], None]
    ) -> None:
        """The replica lists a manual assignment gave partitions CreateTopics / CreatePartitions has just
        created (checked by `validate_replicas`; Kafka's controller writes them in the PartitionRecords,
        the first live replica leading): stored as the partitions' assignment, then `on_done` once each
        is led by its first live replica, or after a bound."""
        ...


@dataclass(frozen=True, slots=True)
class Replicas:
    """A partition's leader, replicas, in-sync and offline replicas as Metadata and
    DescribeTopicPartitions list them."""

    leader: int
    replicas: list[int]
    in_sync: list[int]
    offline: list[int]


def partition_replicas(
    leadership: PartitionLeadership, topic: str, partition: int, alive: Collection[int]
) -> Replicas:
    """MetadataCache's view of one partition: a leader that is not a live broker is no leader (-1, and
    then no replicas are listed, as for an offline partition: clients must never be sent to a broker the
    answer does not list); replicas not alive are offline and out of sync."""
    leader = leadership.leader(topic, partition)
    if leader not in alive:
        return Replicas(-1, [], [], [])
    replicas = list(leadership.replicas(topic, partition)) or [leader]
    in_sync = [n for n in leadership.in_sync_replicas(topic, partition) if n in alive] or [leader]
    return Replicas(leader, replicas, in_sync, [n for n in replicas if n not in alive])


def validate_replicas(replicas: Sequence[int], registered: Collection[int]) -> Outcome | None:
    """ReplicationControlManager.validateManualPartitionAssignment without a replication factor (as
    changePartitionReassignment calls it): None if `replicas` is a valid target, else
    INVALID_REPLICA_ASSIGNMENT with Kafka's message. Brokers are checked in id order, as Kafka does."""
    if not replicas:
        return _invalid("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker_id in sorted(replicas):
        if broker_id not in registered:
            return _invalid(
                f"The manual partition assignment includes broker {broker_id}, but no such broker is "
                "registered."
            )
        if broker_id == previous:
            return _invalid(
                f"The manual partition assignment includes the broker {broker_id} more than once."
            )
        previous = broker_id
    return None


def _invalid(message: str) -> Outcome:
    return Outcome(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


class SingleNodeLeadership:
    """One broker: every partition's only replica, preferred replica and leader is this node.

    So no election is ever needed, the only valid reassignment target is `[node_id]` (a no-op, as the
    controller's PartitionChangeBuilder builds no record when nothing changes) and no reassignment is
    ever in progress.
    """

    __slots__ = ("node_id",)

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id

    def leader(self, topic: str, partition: int) -> int:
        return self.node_id

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 0  # one leader for ever: epoch 0

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        return (self.node_id,)

    def in_sync_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        return (self.node_id,)

    def elect(self, election_type: ElectionType, partitions: Sequence[TopicPartition], on_done: Done) -> None:
        # PREFERRED: partition.hasPreferredLeader(); UNCLEAN: partition.hasLeader(): both always true.
        on_done(dict.fromkeys(partitions, ELECTION_NOT_NEEDED))

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int] | None], on_done: Done) -> None:
        registered = (self.node_id,)
        outcomes: dict[TopicPartition, Outcome] = {}
        for partition, replicas in targets.items():
            if replicas is None:
                outcomes[partition] = NO_REASSIGNMENT_IN_PROGRESS
            else:
                outcomes[partition] = validate_replicas(replicas, registered) or NO_ERROR
        on_done(outcomes)

    def reassignments(self) -> Mapping[TopicPartition, Reassignment]:
        return {}

    def assign_created(
        self, replicas: Mapping[TopicPartition, Sequence[int]], on_done: Callable[[], None]
    ) -> None:
        on_done()  # the only valid list is [node_id]: nothing to store
