"""CreateTopics (19), v0-7. v1: validate_only, error_message; v2: throttle_time_ms; v4: -1 = broker
default partitions/replication; v5: flexible, num_partitions/replication_factor/configs in the result;
v7: topic_id.

Validation follows Kafka's controller (ReplicationControlManager.createTopics) in order: duplicate
names, name, existence, assignments vs counts, replication factor, partitions, placement (up to the live
brokers: one on a single node); the messages are Kafka 4.3's.
Then the configs (INVALID_CONFIG with Kafka's message for an unknown name or a bad value;
kcoord/broker/topics/configs.py says which configs kcoord acts on). Answered once the topics are
durable; a storage failure answers KAFKA_STORAGE_ERROR (retriable) and creates nothing. In a cluster a
topic another node created first (not yet seen here) is TOPIC_ALREADY_EXISTS, the others of the
request are created (`TopicExists`: the registry's refusal). v5+ results
list every config of the new topic with its source, as Kafka does (KIP-525).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.topic_checks import (
    Failure,
    check_assignments,
    check_replication,
    registered_broker_ids,
    replication_factor_invalid,
)
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.configs import InvalidConfig, describe_topic, validate_topic_configs
from kcoord.broker.topics.leadership import TopicPartition
from kcoord.broker.topics.offsets_topic import create_internal
from kcoord.coordinator.metadata import TopicExists, validate_topic_name
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

Topic = dict[str, Any]


def _already_exists(name: str) -> Failure:
    return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    topics: list[Topic] = req["topics"]
    counts = Counter(str(t["name"]) for t in topics)
    outcome: dict[str, Failure | int] = {}
    configs: dict[str, dict[str, str]] = {}
    creatable: set[str] | None = None
    describable: set[str] | None = None
    if ctx.authorizer is not None:
        creatable, describable = _authorized(ctx, meta, set(counts))
    registered = registered_broker_ids(ctx, meta)
    for topic in topics:
        name = str(topic["name"])
        if creatable is not None and name not in creatable and counts[name] == 1:
            outcome[name] = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            continue
        outcome[name] = _check(ctx, topic, counts[name] > 1, registered)
        if isinstance(outcome[name], int):
            try:
                configs[name] = validate_topic_configs({c["name"]: c["value"] for c in topic["configs"]})
            except InvalidConfig as exc:
                outcome[name] = ErrorCode.INVALID_CONFIG, str(exc)
    to_create = [(n, c, configs[n]) for n, c in outcome.items() if isinstance(c, int)]
    replication = {str(t["name"]): _factor(t) for t in topics}
    if not to_create or req["validate_only"]:
        respond(_response(ctx, topics, outcome, version, configs, describable))
        return

    def answer() -> None:
        respond(_response(ctx, topics, outcome, version, configs, describable))

    def durable(error: BaseException | None) -> None:
        if error is not None:
            _not_created(outcome, [name for name, _, _ in to_create], error)
        # A manual assignment's replica lists, as the controller's PartitionRecords carry them.
        created = {n for n, result in outcome.items() if isinstance(result, int)}
        ctx.leadership.assign_created(_assigned(topics, created), answer)

    ctx.topics.create(to_create, durable, replication)


def _factor(topic: Topic) -> int:
    """The replication factor stored and answered: a manual assignment's list length (all equal, as
    checked), else the request's (-1, v4+: default.replication.factor, 1: describe_configs.py)."""
    assignments = topic["assignments"]
    return len(assignments[0]["broker_ids"]) if assignments else max(1, int(topic["replication_factor"]))


def _assigned(topics: list[Topic], created: set[str]) -> dict[TopicPartition, list[int]]:
    return {
        TopicPartition(str(t["name"]), int(a["partition_index"])): [int(b) for b in a["broker_ids"]]
        for t in topics
        if str(t["name"]) in created
        for a in t["assignments"]
    }


def _not_created(outcome: dict[str, Failure | int], names: list[str], error: BaseException) -> None:
    """`TopicExists`: those names lost to another node, the others were created; else none was."""
    for name in names:
        if isinstance(error, TopicExists):
            if name in error.names:
                outcome[name] = _already_exists(name)
        else:
            outcome[name] = (ErrorCode.KAFKA_STORAGE_ERROR, f"storage failure: {error}")


def _authorized(ctx: ServerContext, meta: RequestMeta, names: set[str]) -> tuple[set[str], set[str]]:
    """ControllerApis.createTopics: CREATE on the cluster, else on each topic (refused: 29 "Authorization
    failed."); DESCRIBE_CONFIGS on each topic decides whether its configs are returned."""
    authorizer = ctx.authorizer
    assert authorizer is not None
    principal, host = meta.principal, meta.client_host
    if authorizer.authorize(principal, host, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        creatable = names
    else:
        creatable = authz.filter_allowed(ctx, meta, 19, AclOperation.CREATE, ResourceType.TOPIC, names)
    describe = AclOperation.DESCRIBE_CONFIGS
    return creatable, {
        n for n in names if authorizer.authorize(principal, host, describe, ResourceType.TOPIC, n)
    }


def _check(ctx: ServerContext, topic: Topic, duplicate: bool, registered: frozenset[int]) -> Failure | int:
    """The partition count to create, or (error, message)."""
    name = str(topic["name"])
    if duplicate:  # ControllerApis.createTopics, before the controller sees the request
        return ErrorCode.INVALID_REQUEST, "Duplicate topic name."
    if (reason := validate_topic_name(name)) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, reason
    if ctx.topics.get(name) is not None or ctx.topics.is_pending(name):
        return _already_exists(name)
    if create_internal(ctx.data.offsets, name):  # the coordinator log's view: it exists from now on
        return _already_exists(name)
    assignments: list[dict[str, Any]] = topic["assignments"]
    num_partitions = int(topic["num_partitions"])
    replication = int(topic["replication_factor"])
    if assignments:
        return _check_manual(assignments, num_partitions, replication, registered)
    # ReplicationControlManager.createTopic: replication factor, partition count, then placement.
    if (failure := replication_factor_invalid(replication)) is not None:
        return failure
    if num_partitions == -1:
        num_partitions = ctx.config.num_partitions
    if num_partitions <= 0:
        return ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
    failure = check_replication(replication, len(registered))
    return failure if failure is not None else num_partitions


def _check_manual(
    assignments: list[dict[str, Any]], num_partitions: int, replication: int, registered: frozenset[int]
) -> Failure | int:
    """ReplicationControlManager.createTopic with assignments: both counts must be left at -1
    (replication factor checked first), then the assignments themselves."""
    if replication != -1:
        return ErrorCode.INVALID_REQUEST, (
            "A manual partition assignment was specified, but replication factor was not set to -1."
        )
    if num_partitions != -1:
        return ErrorCode.INVALID_REQUEST, (
            "A manual partition assignment was specified, but numPartitions was not set to -1."
        )
    return check_assignments(assignments, registered)


def _response(
    ctx: ServerContext,
    topics: list[Topic],
    outcome: dict[str, Failure | int],
    version: int,
    configs: dict[str, dict[str, str]],
    describable: set[str] | None = None,
) -> dict[str, Any]:
    results = []
    seen: set[str] = set()
    for topic in topics:
        name = str(topic["name"])
        if name in seen:  # one result per distinct name, as Kafka answers duplicates
            continue
        seen.add(name)
        result = _result(ctx, name, outcome[name], version, configs.get(name, {}), _factor(topic))
        if describable is not None and name not in describable and result["error_code"] == ErrorCode.NONE:
            _hide_configs(result, version)
        results.append(result)
    return {"topics": results}


def _result(
    ctx: ServerContext, name: str, outcome: Failure | int, version: int, configs: dict[str, str], factor: int
) -> dict[str, Any]:
    if not isinstance(outcome, int):
        error, message = outcome
        return {"name": name, "error_code": error, **({"error_message": message} if version >= 1 else {})}
    result: dict[str, Any] = {"name": name, "error_code": ErrorCode.NONE}
    if version >= 5:
        entries = [
            {
                "name": e.name,
                "value": e.value,
                "read_only": False,
                "config_source": e.source,
                "is_sensitive": False,
            }
            for e in describe_topic(configs, broker=ctx.config.topic_defaults())
        ]
        result.update(num_partitions=outcome, replication_factor=factor, configs=entries)
    created = ctx.topics.get(name)
    if version >= 7 and created is not None:
        result["topic_id"] = created.topic_id
    return result


def _hide_configs(result: dict[str, Any], version: int) -> None:
    """ReplicationControlManager.createTopic without DESCRIBE_CONFIGS: no configs, no counts, and
    topic_config_error_code TOPIC_AUTHORIZATION_FAILED (v5+)."""
    if version >= 5:
        for key in ("configs", "num_partitions", "replication_factor"):
            result.pop(key, None)
        result["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
