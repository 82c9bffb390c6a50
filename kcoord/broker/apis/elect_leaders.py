"""ElectLeaders (43), v0-2. v1: election_type and a top-level error code; v2: flexible.

Kafka 4.0's brokers forward it to the controller: ControllerApis.handleElectLeaders checks ALTER on
the cluster, QuorumController.electLeaders answers an empty partition list at once, and
ReplicationControlManager.electLeaders decides each partition: UNKNOWN_TOPIC_OR_PARTITION ("No such
topic as t" / "No such partition as t-p"), then the election (`ctx.leadership`). A null partition
list means every partition of every topic; then each topic is listed and only the partitions whose
answer is not ELECTION_NOT_NEEDED under it. A refused ALTER, or an election type Kafka does not know
(INVALID_REQUEST), is ElectLeadersRequest.getErrorResponse: the error at the top (v1+) and on every
requested partition.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.leadership import ELECTION_NOT_NEEDED, ElectionType, Outcome, TopicPartition
from kcoord.broker.topics.offsets_topic import has_partition, internal_topic
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

API_KEY = 43
NOT_AUTHORIZED = "Request is not authorized."  # ClusterAuthorizationException from authorizeClusterOperation
_ELECTION_TYPES = frozenset(int(t) for t in ElectionType)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    requested = req["topic_partitions"]
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, API_KEY, AclOperation.ALTER):
        respond(_refusal(meta, requested, Outcome(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)))
        return
    if requested is not None and not requested:
        respond({"replica_election_results": []})
        return
    election_type = int(req["election_type"])
    if election_type not in _ELECTION_TYPES:
        invalid = Outcome(ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}")
        respond(_refusal(meta, requested, invalid))
        return
    everything = requested is None
    asked = _all_partitions(ctx) if requested is None else _named(requested)
    outcomes = _unknown_partitions(ctx, asked)
    known = [TopicPartition(t, p) for t, p in asked if TopicPartition(t, p) not in outcomes]

    def elected(results: dict[TopicPartition, Outcome]) -> None:
        outcomes.update(results)
        respond({"replica_election_results": _results(asked, outcomes, everything)})

    ctx.leadership.elect(ElectionType(election_type), known, elected)


def _unknown_partitions(ctx: ServerContext, asked: list[tuple[str, int]]) -> dict[TopicPartition, Outcome]:
    """ReplicationControlManager.electLeader's first checks, before leadership is looked at."""
    unknown: dict[TopicPartition, Outcome] = {}
    for topic, partition in asked:
        if internal_topic(ctx.data.offsets, topic) is not None and has_partition(
            ctx.topics, ctx.data.offsets, topic, partition
        ):  # the view's partitions have one replica, their leader (the shard's owner in a cluster)
            unknown[TopicPartition(topic, partition)] = ELECTION_NOT_NEEDED
            continue
        if ctx.topics.get(topic) is None and internal_topic(ctx.data.offsets, topic) is None:
            message = f"No such topic as {topic}"
        elif not ctx.topics.has_partition(topic, partition):
            message = f"No such partition as {topic}-{partition}"
        else:
            continue
        unknown[TopicPartition(topic, partition)] = Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message)
    return unknown


def _named(requested: list[Any]) -> list[tuple[str, int]]:
    return [(str(t["topic"]), int(p)) for t in requested for p in t["partitions"]]


def _all_partitions(ctx: ServerContext) -> list[tuple[str, int]]:
    return [(t.name, p) for t in ctx.topics.all() for p in range(t.num_partitions)]


def _results(
    asked: list[tuple[str, int]], outcomes: dict[TopicPartition, Outcome], everything: bool
) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, partition in asked:
        entries = by_topic.setdefault(topic, [])
        outcome = outcomes[TopicPartition(topic, partition)]
        if everything and outcome.error == ErrorCode.ELECTION_NOT_NEEDED:
            continue  # "we do not return partitions which already have the desired leader"
        entries.append(
            {"partition_id": partition, "error_code": outcome.error, "error_message": outcome.message}
        )
    return [{"topic": topic, "partition_result": entries} for topic, entries in by_topic.items()]


def _refusal(meta: RequestMeta, requested: list[Any] | None, outcome: Outcome) -> dict[str, Any]:
    results = [
        {
            "topic": t["topic"],
            "partition_result": [
                {"partition_id": p, "error_code": outcome.error, "error_message": outcome.message}
                for p in t["partitions"]
            ],
        }
        for t in requested or ()
    ]
    body: dict[str, Any] = {"replica_election_results": results}
    if meta.api_version >= 1:
        body["error_code"] = outcome.error
    return body
