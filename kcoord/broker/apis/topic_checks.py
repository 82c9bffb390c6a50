"""Checks shared by CreateTopics and CreatePartitions: replica assignments and replication factors.

A single node is the one broker, so the only valid replica list is `[node_id]` and the only valid
replication factor 1 (or -1 = the default, which is 1 here). A cluster accepts a factor up to its live
nodes, and manual assignments naming any live nodes: every node can take a partition over, since its
data is in PostgreSQL (docs/cluster.md, "Replicas").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from kcoord.broker.context import RequestMeta, ServerContext
from kcoord.broker.topics.leadership import validate_replicas
from kcoord.protocol.errors import ErrorCode

__all__ = [
    "Failure",
    "check_assignments",
    "check_replication",
    "registered_broker_ids",
    "registered_brokers",
    "replication_factor_invalid",
]

Failure = tuple[ErrorCode, str]

_NOT_CONSECUTIVE = "partitions should be a consecutive 0-based integer sequence"


def registered_brokers(ctx: ServerContext, meta: RequestMeta) -> int:
    """How many brokers a replication factor may span: this node alone, or every live cluster node
    (Kafka's placer counts the registered, unfenced brokers: ClusterDescriber.usableBrokers)."""
    return 1 if ctx.brokers is None else max(1, len(ctx.brokers.brokers(meta.listener_name)))


def check_replication(replication_factor: int, registered: int = 1) -> Failure | None:
    """ReplicationControlManager.createTopic's own check, then StripedReplicaPlacer.place's refusal (its
    InvalidReplicationFactorException message after "Unable to replicate the partition N time(s): ";
    Kafka 4's words name cordoned log directories, KIP-1066). CreateTopics checks the partition count
    between the two: `replication_factor_invalid` is the first half alone."""
    return replication_factor_invalid(replication_factor) or _unplaceable(replication_factor, registered)


def replication_factor_invalid(replication_factor: int) -> Failure | None:
    if replication_factor < -1 or replication_factor == 0:
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    return None


def _unplaceable(replication_factor: int, registered: int) -> Failure | None:
    if replication_factor == -1 or replication_factor <= registered:
        return None
    return ErrorCode.INVALID_REPLICATION_FACTOR, (
        f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
        f"{replication_factor} cannot be reached because only {registered} broker(s) are registered or some "
        "brokers have all their log directories cordoned."
    )


def registered_broker_ids(ctx: ServerContext, meta: RequestMeta) -> frozenset[int]:
    """The broker ids a manual assignment may name (Kafka's `clusterControl.brokerRegistrations`):
    this node, or every live cluster node."""
    if ctx.brokers is None:
        return frozenset((ctx.node_id,))
    return frozenset(broker[0] for broker in ctx.brokers.brokers(meta.listener_name)) | {ctx.node_id}


def check_assignments(
    assignments: Sequence[dict[str, Any]],
    registered: Collection[int],
    replication_factor: int | None = None,
    first_index: int = 0,
) -> Failure | int:
    """The replica lists of a manual assignment -> the partition count, or the failure, in the order
    ReplicationControlManager checks them: for CreateTopics (`createTopic`) each partition once, each
    list valid and as long as the first (`validateManualPartitionAssignment`), then the indexes
    consecutive from 0; for CreatePartitions (`createPartitions`, no indexes) each list valid and as long
    as the topic's existing replication factor."""
    seen: set[int] = set()
    for i, assignment in enumerate(assignments):
        index = int(assignment.get("partition_index", first_index + i))
        if index in seen:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"Found multiple manual partition assignments for partition {index}"
            )
        seen.add(index)
        replicas = [int(b) for b in assignment["broker_ids"]]
        invalid = validate_replicas(replicas, registered)
        if invalid is not None:
            return invalid.error, str(invalid.message)
        if replication_factor is not None and len(replicas) != replication_factor:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                f"but this is not consistent with previous partitions, which have {replication_factor} "
                "replica(s)."
            )
        if replication_factor is None:
            replication_factor = len(replicas)
    if seen != set(range(first_index, first_index + len(assignments))):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return len(assignments)
