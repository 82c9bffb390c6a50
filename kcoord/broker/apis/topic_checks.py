"""Checks shared by CreateTopics and CreatePartitions: replica assignments and replication factors.

A single node is the one broker, so the only valid replica list is `[node_id]` and the only valid
replication factor 1 (or -1 = the default, which is 1 here). A cluster accepts a factor up to its live
nodes: every node can take a partition over, since its data is in PostgreSQL (docs/cluster.md,
"Replicas"); a manual assignment still names this node alone.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import RequestMeta, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = [
    "Failure",
    "check_assignments",
    "check_replication",
    "registered_brokers",
    "replication_factor_invalid",
]

Failure = tuple[ErrorCode, str]


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


def check_assignments(
    ctx: ServerContext, assignments: list[dict[str, Any]], first_index: int
) -> Failure | int:
    """Manual assignments (CreateTopics: indexes first_index.. contiguous) -> partition count or failure."""
    indexes = sorted(int(a.get("partition_index", first_index + i)) for i, a in enumerate(assignments))
    if indexes != list(range(first_index, first_index + len(assignments))):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be assigned consecutively from 0."
    for assignment in assignments:
        if list(assignment["broker_ids"]) != [ctx.node_id]:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"Replica assignment {assignment['broker_ids']} is invalid: the only broker is {ctx.node_id}."
            )
    return len(assignments)
