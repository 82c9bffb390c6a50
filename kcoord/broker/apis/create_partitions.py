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
from kcoord.broker.apis.topic_checks import check_assignments
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import internal_topic
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

Outcome = tuple[ErrorCode, str | None] | int

Topic = dict[str, Any]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics: list[Topic] = req["topics"]
    counts = Counter(str(t["name"]) for t in topics)
    outcome: dict[str, Outcome] = {str(t["name"]): _check(ctx, t, counts[str(t["name"])] > 1) for t in topics}
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

    def durable(error: BaseException | None) -> None:
        if error is not None:
            for name, _ in changes:
                outcome[name] = (ErrorCode.KAFKA_STORAGE_ERROR, f"storage failure: {error}")
        respond(_response(outcome))

    ctx.topics.set_partition_count(changes, durable)


def _check(ctx: ServerContext, topic: Topic, duplicate: bool) -> Outcome:
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
        failure = check_assignments(ctx, assignments, first_index=0)
        if not isinstance(failure, int):
            return failure
    return count


def _response(outcome: dict[str, Outcome]) -> dict[str, Any]:
    results = []
    for name, result in outcome.items():
        error, message = (ErrorCode.NONE, None) if isinstance(result, int) else result
        results.append({"name": name, "error_code": error, "error_message": message})
    return {"results": results}
