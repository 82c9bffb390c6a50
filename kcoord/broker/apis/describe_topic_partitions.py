"""DescribeTopicPartitions (75), v0 (flexible, KIP-966): Metadata's topics, paged.

As Kafka's DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.describeTopicResponse:
- no topics named: every topic (unknown or undescribable ones are simply absent); named topics: each
  of them, an undescribable one TOPIC_AUTHORIZATION_FAILED (zero id, no partitions), an unknown one
  UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an invalid name);
- only topics from the cursor's topic name on (string order), in name order; the cursor's topic must
  be among the named ones and its partition index must not be negative, else INVALID_REQUEST for every
  named topic (DescribeTopicPartitionsRequest.getErrorResponse);
- at most min(response_partition_limit, max.request.partition.size.limit 2000), at least 1,
  partitions in all, the cursor's topic from the cursor's partition: a topic cut by the limit ends
  the page with `next_cursor` at its next partition; a limit used up exactly at a topic's end puts
  `next_cursor` at the start of the next topic (known or not);
- each partition as Metadata tells it (the leader, its one replica, in sync), with no eligible leader
  replicas (KIP-966's ELR is empty with one replica); each described topic's authorized operations.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.leadership import partition_replicas
from kcoord.coordinator.metadata import validate_topic_name
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = ["API_KEY", "handle"]

API_KEY = 75
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default
# org.apache.kafka.common.internals.Topic.isInternal
_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    cursor = req["cursor"]
    start_name = "" if cursor is None else str(cursor["topic_name"])
    fetch_all = not req["topics"]
    if fetch_all:
        names = {t.name for t in ctx.topics.all() if t.name >= start_name}
    else:
        names = {str(t["name"]) for t in req["topics"] if str(t["name"]) >= start_name}
        if cursor is not None and start_name not in names:  # "... should contain the cursor topic"
            respond(_invalid(req))
            return
    if cursor is not None and int(cursor["partition_index"]) < 0:  # "... cursor partition must be valid"
        respond(_invalid(req))
        return
    ordered, refused = _authorized(ctx, meta, sorted(names), fetch_all)
    limit = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, int(req["response_partition_limit"])), 1)
    start_index = 0 if cursor is None else int(cursor["partition_index"])
    body = _describe(ctx, meta, ordered, start_name, start_index, limit, fetch_all)
    for topic in body["topics"]:
        topic["topic_authorized_operations"] = authz.authorized_operations(
            ctx, meta, ResourceType.TOPIC, topic["name"]
        )
    body["topics"].extend(refused)
    respond(body)


def _authorized(
    ctx: ServerContext, meta: RequestMeta, names: list[str], fetch_all: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    """(the describable names, the refusals of named ones): an unauthorized topic is never revealed
    to exist, so it is refused before its existence is looked at."""
    if ctx.authorizer is None:
        return names, []
    allowed = authz.filter_allowed(ctx, meta, API_KEY, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    denied = [] if fetch_all else [n for n in names if n not in allowed]
    return [n for n in names if n in allowed], [_topic_error(n, _DENIED) for n in denied]


def _describe(
    ctx: ServerContext, meta: RequestMeta, names: list[str], start_name: str, start_index: int, limit: int,
    fetch_all: bool,
) -> dict[str, Any]:  # fmt: skip
    """KRaftMetadataCache.describeTopicResponse: topics in order while partitions remain."""
    alive = _alive(ctx, meta)
    remaining = limit
    topics: list[dict[str, Any]] = []
    body: dict[str, Any] = {"topics": topics, "next_cursor": None}
    for name in names:
        if remaining == 0:  # the next page starts with this topic
            body["next_cursor"] = {"topic_name": name, "partition_index": 0}
            break
        record = ctx.topics.get(name)
        if record is None:
            if not fetch_all:
                topics.append(_topic_error(name, _missing(name)))
            continue
        first = start_index if name == start_name else 0
        upper = min(record.num_partitions, first + remaining)
        partitions = [_partition(ctx, name, index, alive) for index in range(first, upper)]
        topics.append({
            "error_code": ErrorCode.NONE, "name": name, "topic_id": record.topic_id,
            "is_internal": name in INTERNAL_TOPICS, "partitions": partitions,
        })  # fmt: skip
        if upper < record.num_partitions:  # the topic is cut: the page ends with it
            body["next_cursor"] = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(partitions)
    return body


def _partition(ctx: ServerContext, name: str, index: int, alive: set[int]) -> dict[str, Any]:
    """As Metadata answers it (metadata.py): a leader that is not a live broker is no leader."""
    listed = partition_replicas(ctx.leadership, name, index, alive)
    return {
        "error_code": ErrorCode.NONE if listed.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": index,
        "leader_id": listed.leader,
        "leader_epoch": ctx.leadership.leader_epoch(name, index),  # as Metadata reports it
        "replica_nodes": listed.replicas,
        "isr_nodes": listed.in_sync,
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": listed.offline,
    }


def _alive(ctx: ServerContext, meta: RequestMeta) -> set[int]:
    if ctx.brokers is None:
        return {ctx.node_id}
    return {node_id for node_id, *_ in ctx.brokers.brokers(meta.listener_name)}


def _missing(name: str) -> ErrorCode:
    if validate_topic_name(name) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _topic_error(name: str, error: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": error, "name": name, "topic_id": ZERO_UUID, "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
    }  # fmt: skip


def _invalid(req: Request) -> dict[str, Any]:
    """DescribeTopicPartitionsRequest.getErrorResponse for the InvalidRequestException: every named
    topic with INVALID_REQUEST, nothing else (its message only reaches Kafka's request log)."""
    return {
        "topics": [
            {
                "error_code": ErrorCode.INVALID_REQUEST,
                "name": t["name"],
                "is_internal": False,
                "partitions": [],
            }
            for t in req["topics"]
        ]
    }
