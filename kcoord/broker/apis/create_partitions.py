"""CreatePartitions (37), v0-3. v1: same as v0; v2: flexible; v3: THROTTLING_QUOTA_EXCEEDED (unused).

Grows existing topics (Kafka's ReplicationControlManager.createPartitions checks, in order: duplicate,
existence, count must grow, assignments). Answered once durable; a storage failure answers
KAFKA_STORAGE_ERROR (retriable) and changes nothing. Consumers see the new partitions through
Metadata and the next rebalance (the group leader's metadata refresh), as with Kafka.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.topic_checks import check_assignments, registered_broker_ids
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.leadership import TopicPartition
from kcoord.broker.topics.offsets_topic import internal_topic
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

Outcome = tuple[ErrorCode, str | None] | int

Topic = dict[str, Any]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics: list[Topic] = req["topics"]
    counts = Counter(str(t["name"]) for t in topics)
    registered = registered_broker_ids(ctx, meta)
    outcome: dict[str, Outcome] = {
        str(t["name"]): _check(ctx, t, counts[str(t["name"])] > 1, registered) for t in topics
    }
    if ctx.authorizer is not None:  # ControllerApis.createPartitions: ALTER on each (non-duplicate) topic
        names = [name for name, n in counts.items() if n == 1]
        alterable = authz.filter_allowed(ctx, meta, 37, AclOperation.ALTER, ResourceType.TOPIC, names)
        outcome.update(
            {name: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None) for name in names if name not in alterable}
        )
    changes = [(name, count) for name, count in outcome.items() if isinstance(count, int)]
    if not changes or req["validate_only"]:
        respond(_response(outcome))
        return

    first_new = {name: _partition_count(ctx, name) for name, _ in changes}  # the new ones' first index

    def durable(error: BaseException | None) -> None:
        if error is not None:
            for name, _ in changes:
                outcome[name] = (ErrorCode.KAFKA_STORAGE_ERROR, f"storage failure: {error}")
            respond(_response(outcome))
            return
        assigned = {
            TopicPartition(str(t["name"]), first_new[str(t["name"])] + i): [int(b) for b in a["broker_ids"]]
            for t in topics
            if str(t["name"]) in first_new and t["assignments"]
            for i, a in enumerate(t["assignments"])
        }
        # A manual assignment's replica lists, as the controller's new PartitionRecords carry them.
        ctx.leadership.assign_created(assigned, lambda: respond(_response(outcome)))

    ctx.topics.set_partition_count(changes, durable)


def _partition_count(ctx: ServerContext, name: str) -> int:
    existing = ctx.topics.get(name)
    return 0 if existing is None else existing.num_partitions


def _check(ctx: ServerContext, topic: Topic, duplicate: bool, registered: frozenset[int]) -> Outcome:
    name = str(topic["name"])
    if duplicate:  # ControllerApis.createPartitions
        return ErrorCode.INVALID_REQUEST, "Duplicate topic name."
    if internal_topic(ctx.data.offsets, name) is not None:  # its partition count is fixed (compat.md)
        return ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot add partitions to internal topic {name}."
    existing = ctx.topics.get(name)
    if existing is None:  # a bare UnknownTopicOrPartitionException: Kafka sends no message
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if ctx.topics.is_pending(name):
        return ErrorCode.INVALID_REQUEST, f"Topic '{name}' is being changed by another request."
    count = int(topic["count"])
    current = existing.num_partitions
    # ReplicationControlManager.createPartitions(context, topic, records): Kafka 4.3's words.
    if count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if count < current:
        return ErrorCode.INVALID_PARTITIONS, (
            f"The topic {name} currently has {current} partition(s); {count} would not be an increase."
        )
    assignments: list[dict[str, Any]] | None = topic["assignments"]
    if assignments is not None:
        if len(assignments) != count - current:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"Attempted to add {count - current} additional partition(s), but only "
                f"{len(assignments)} assignment(s) were specified."
            )
        failure = check_assignments(assignments, registered, existing.replication_factor)
        if not isinstance(failure, int):
            return failure
    return count


def _response(outcome: dict[str, Outcome]) -> dict[str, Any]:
    results = []
    for name, result in outcome.items():
        error, message = (ErrorCode.NONE, None) if isinstance(result, int) else result
        results.append({"name": name, "error_code": error, "error_message": message})
    return {"results": results}
