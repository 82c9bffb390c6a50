"""AlterPartitionReassignments (45), v0-1, and ListPartitionReassignments (46), v0 (flexible), KIP-455.
v1 (KIP-860): allow_replication_factor_change, echoed in the answer; false refuses a valid target of
another size than the partition's replicas (ReplicationControlManager.changePartitionReassignment ->
validatePartitionReplicationFactorUnchanged: INVALID_REPLICATION_FACTOR "The replication factor is
changed from X to Y", after validateManualPartitionAssignment).

Kafka 4.0's brokers forward both to the controller. ControllerApis.handleAlterPartitionReassignments
checks ALTER on the cluster, handleListPartitionReassignments DESCRIBE; a refusal is the request's
getErrorResponse: CLUSTER_AUTHORIZATION_FAILED at the top level and (Alter) on every partition or
(List) on an empty entry per requested partition. Then ReplicationControlManager:
- alterPartitionReassignment: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic
  named t.", an unknown partition "Unable to find partition t:p."; otherwise `ctx.leadership.reassign`
  decides (INVALID_REPLICA_ASSIGNMENT for a broker that is not registered, a repeated or an empty
  list; NO_REASSIGNMENT_IN_PROGRESS to cancel when none runs);
- listPartitionReassignments: the ongoing reassignments, all of them (null topics) or those of the
  named partitions; unknown topics and partitions without one are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.leadership import Outcome, Reassignment, TopicPartition, validate_replicas
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle_alter", "handle_list"]

ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
NOT_AUTHORIZED = "Request is not authorized."  # ClusterAuthorizationException from authorizeClusterOperation
_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def handle_alter(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics = req["topics"]
    if ctx.authorizer is not None and not authz.cluster_allowed(
        ctx, meta, ALTER_PARTITION_REASSIGNMENTS, AclOperation.ALTER
    ):
        respond(_alter_refused(topics))
        return
    allow = bool(req["allow_replication_factor_change"])  # v0: its default, true
    if not topics:  # QuorumController.alterPartitionReassignments: a fresh response, its message ""
        respond(
            {"error_code": 0, "error_message": "", "responses": [], "allow_replication_factor_change": allow}
        )
        return
    asked: list[TopicPartition] = []
    outcomes: dict[TopicPartition, Outcome] = {}
    targets: dict[TopicPartition, Sequence[int] | None] = {}
    for topic in topics:
        name = str(topic["name"])
        for partition in topic["partitions"]:
            tp = TopicPartition(name, int(partition["partition_index"]))
            asked.append(tp)
            if (unknown := _unknown(ctx, tp)) is not None:
                outcomes[tp] = unknown
            elif not allow and (changed := _factor_changed(ctx, meta, tp, partition["replicas"])) is not None:
                outcomes[tp] = changed
            else:
                replicas: Sequence[int] | None = partition["replicas"]
                targets[tp] = None if replicas is None else [int(r) for r in replicas]

    def reassigned(results: dict[TopicPartition, Outcome]) -> None:
        outcomes.update(results)
        body: dict[str, Any] = {
            "error_code": 0,
            "error_message": None,
            "responses": _responses(asked, outcomes),
        }
        respond(body | {"allow_replication_factor_change": allow})

    ctx.leadership.reassign(targets, reassigned)


def _factor_changed(
    ctx: ServerContext, meta: RequestMeta, tp: TopicPartition, replicas: list[int] | None
) -> Outcome | None:
    """validatePartitionReplicationFactorUnchanged for a target validateManualPartitionAssignment
    accepts (an invalid one keeps its INVALID_REPLICA_ASSIGNMENT from `reassign`): the current factor is
    the replicas' count, or during a reassignment the replicas and adding ones less the removing ones."""
    if replicas is None:
        return None
    registered = (
        [ctx.node_id] if ctx.brokers is None else [b[0] for b in ctx.brokers.brokers(meta.listener_name)]
    )
    if validate_replicas(replicas, registered) is not None:
        return None
    current = 1  # kcoord keeps one replica of every partition
    if (ongoing := ctx.leadership.reassignments().get(tp)) is not None:
        current = len(set(ongoing.replicas) | set(ongoing.adding_replicas) - set(ongoing.removing_replicas))
    if current == len(replicas):
        return None
    message = f"The replication factor is changed from {current} to {len(replicas)}"
    return Outcome(ErrorCode.INVALID_REPLICATION_FACTOR, message)


def _alter_refused(topics: list[Any]) -> dict[str, object]:
    """AlterPartitionReassignmentsRequest.getErrorResponse: the error at the top and on every partition."""
    asked = [
        TopicPartition(str(t["name"]), int(p["partition_index"])) for t in topics for p in t["partitions"]
    ]
    outcomes = dict.fromkeys(asked, Outcome(_DENIED, NOT_AUTHORIZED))
    return {"error_code": _DENIED, "error_message": NOT_AUTHORIZED, "responses": _responses(asked, outcomes)}


def _unknown(ctx: ServerContext, tp: TopicPartition) -> Outcome | None:
    if ctx.topics.get(tp.topic) is None:
        return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {tp.topic}.")
    if not ctx.topics.has_partition(tp.topic, tp.partition):
        return Outcome(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {tp.topic}:{tp.partition}."
        )
    return None


def _responses(asked: list[TopicPartition], outcomes: dict[TopicPartition, Outcome]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in asked:
        outcome = outcomes[tp]
        by_topic.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": outcome.error, "error_message": outcome.message}
        )
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]


def handle_list(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics = req["topics"]
    if ctx.authorizer is not None and not authz.cluster_allowed(
        ctx, meta, LIST_PARTITION_REASSIGNMENTS, AclOperation.DESCRIBE
    ):
        empty = [
            {"name": t["name"], "partitions": [_ongoing(int(p), None) for p in t["partition_indexes"]]}
            for t in topics or ()
        ]
        respond({"error_code": _DENIED, "error_message": NOT_AUTHORIZED, "topics": empty})
        return
    ongoing = ctx.leadership.reassignments()
    if topics is None:
        wanted = sorted(ongoing, key=lambda tp: (tp.topic, tp.partition))
    else:  # a topic not in the registry is left out, as the controller's topicsByName lookup does
        wanted = [
            TopicPartition(str(t["name"]), int(p))
            for t in topics
            if ctx.topics.get(str(t["name"])) is not None
            for p in t["partition_indexes"]
        ]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in wanted:
        if (reassignment := ongoing.get(tp)) is not None:
            by_topic.setdefault(tp.topic, []).append(_ongoing(tp.partition, reassignment))
    respond(
        {
            "error_code": 0,
            "error_message": None,
            "topics": [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()],
        }
    )


def _ongoing(partition: int, reassignment: Reassignment | None) -> dict[str, Any]:
    if reassignment is None:  # getErrorResponse: the partition index and empty lists
        return {"partition_index": partition, "replicas": [], "adding_replicas": [], "removing_replicas": []}
    return {
        "partition_index": partition,
        "replicas": list(reassignment.replicas),
        "adding_replicas": list(reassignment.adding_replicas),
        "removing_replicas": list(reassignment.removing_replicas),
    }
