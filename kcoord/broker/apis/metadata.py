"""Metadata (3), v0-13 (v13: top-level error_code, KIP-1102, always NONE here).
v0: empty topic list = all topics; v1: null = all, rack, controller_id,
is_internal; v2: cluster_id; v4: allow_auto_topic_creation; v5: offline_replicas; v7: leader_epoch;
v8-10: authorized operations (no authorizer: every operation Kafka supports on the resource, as
Kafka's AuthHelper.authorizedOperations answers without one); v9: flexible; v10: topic_id; v12: lookup by id.

This node is the only broker and leads every partition. Topics are auto-created when
`--auto-create-topics` is on and the request allows it; unlike Kafka (which answers
LEADER_NOT_AVAILABLE first) we answer once the topic is durable, with the topic itself (docs/compat.md).
"""

from __future__ import annotations

import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.leadership import partition_replicas
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC, create_internal, internal_topic
from kcoord.coordinator.metadata import TopicRecord, validate_topic_name
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["CLUSTER_AUTHORIZED_OPERATIONS", "broker_entry", "handle"]

_NO_ID = uuid.UUID(int=0)
# AclOperation codes Kafka supports per resource type (AclEntry.supportedOperations): cluster CREATE,
# ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE; topic READ,
# WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
TOPIC_AUTHORIZED_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    wanted = _requested(ctx, req, version)
    allow = version < 4 or bool(req["allow_auto_topic_creation"])
    refused: Refused = {}
    if ctx.authorizer is not None and wanted is not None:
        refused = _refused(ctx, meta, wanted, allow and ctx.config.auto_create_topics)
    missing = (
        []
        if wanted is None or not (allow and ctx.config.auto_create_topics)
        else [
            name
            for name in dict.fromkeys(n for n, _ in wanted if n is not None)
            if _lookup(ctx, name) is None
            and not ctx.topics.is_pending(name)
            and validate_topic_name(name) is None
            and name not in refused
            and not create_internal(ctx.data.offsets, name)  # Kafka's internal-topic creation
        ]
    )
    if not missing:
        respond(_response(ctx, req, meta, wanted, refused))
        return
    # Answer once the new topics are durable (a failed write leaves them unknown: a retriable error).
    ctx.topics.create(
        [(name, ctx.config.num_partitions, {}) for name in missing],
        lambda error: respond(_response(ctx, req, meta, wanted, refused)),
    )


# Topic names refused by the authorizer -> True if refused DESCRIBE (their existence stays hidden),
# False if refused CREATE for an auto-creation.
Refused = dict[str, bool]


def _refused(ctx: ServerContext, meta: RequestMeta, wanted: Wanted, auto_create: bool) -> Refused:
    """KafkaApis.handleTopicMetadataRequest: DESCRIBE on each named topic, before its existence is
    looked at; an auto-creation also needs CREATE on the cluster or else on the topic."""
    names = {n for n, _ in wanted if n is not None}
    describable = authz.filter_allowed(ctx, meta, 3, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    refused = dict.fromkeys(names - describable, True)
    absent = [n for n in describable if _lookup(ctx, n) is None]
    authorizer = ctx.authorizer
    assert authorizer is not None
    if (
        absent
        and auto_create
        and not authorizer.authorize(
            meta.principal, meta.client_host, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME
        )
    ):
        creatable = authz.filter_allowed(ctx, meta, 3, AclOperation.CREATE, ResourceType.TOPIC, absent)
        refused.update(dict.fromkeys(set(absent) - creatable, False))
    return refused


Wanted = list[tuple[str | None, uuid.UUID]]


def _requested(ctx: ServerContext, req: Request, version: int) -> Wanted | None:
    """(name, topic_id) pairs, None = all topics. v10+ may name a topic by id only (null name)."""
    topics = req["topics"]
    if topics is None or (version == 0 and not topics):
        return None
    wanted: Wanted = []
    for topic in topics:
        name, topic_id = topic["name"], topic.get("topic_id", _NO_ID)
        if name is None and (internal := internal_topic(ctx.data.offsets, topic_id=topic_id)) is not None:
            name = internal.name
        wanted.append((name if name is not None else ctx.topics.name_for_id(topic_id), topic_id))
    return wanted


def _lookup(ctx: ServerContext, name: str) -> TopicRecord | None:
    """A topic of the registry, or `__consumer_offsets` (the coordinator log's view)."""
    return internal_topic(ctx.data.offsets, name) or ctx.topics.get(name)


def _all_topics(ctx: ServerContext) -> list[TopicRecord]:
    internal = internal_topic(ctx.data.offsets, OFFSETS_TOPIC)
    return ctx.topics.all() if internal is None else [*ctx.topics.all(), internal]


def _response(
    ctx: ServerContext, req: Request, meta: RequestMeta, wanted: Wanted | None, refused: Refused
) -> dict[str, Any]:
    version = meta.api_version
    brokers = broker_entries(ctx, meta)
    # Leaders and in-sync replicas only among the live brokers; a lapsed one is listed, never led by.
    live = {ctx.node_id} if ctx.brokers is None else {b[0] for b in ctx.brokers.brokers(meta.listener_name)}
    if wanted is None:
        topics = [_topic_entry(ctx, t.name, t, version, live) for t in _visible(ctx, meta)]
    else:
        topics = [
            _topic_entry(ctx, name, _lookup(ctx, name), version, live)
            if name is not None and name not in refused
            else _refused_entry(name, topic_id, refused)
            for name, topic_id in wanted
        ]
    body: dict[str, Any] = {"brokers": brokers, "topics": topics}
    if version >= 1:
        body["controller_id"] = ctx.node_id if ctx.brokers is None else ctx.brokers.controller_id()
    if version >= 2:
        body["cluster_id"] = ctx.config.cluster_id
    if ctx.authorizer is not None:
        _operations_from_acls(ctx, req, meta, body, refused)
        return body
    if 8 <= version <= 10 and req["include_cluster_authorized_operations"]:
        body["cluster_authorized_operations"] = CLUSTER_AUTHORIZED_OPERATIONS
    if version >= 8 and req["include_topic_authorized_operations"]:
        for topic in topics:
            if topic["error_code"] == ErrorCode.NONE:
                topic["topic_authorized_operations"] = TOPIC_AUTHORIZED_OPERATIONS
    return body


def _visible(ctx: ServerContext, meta: RequestMeta) -> list[TopicRecord]:
    """All topics: those the caller may not DESCRIBE are left out (no denial: logIfDenied=false)."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return _all_topics(ctx)
    principal, host, describe, topic = (
        meta.principal,
        meta.client_host,
        AclOperation.DESCRIBE,
        ResourceType.TOPIC,
    )
    return [t for t in _all_topics(ctx) if authorizer.authorize(principal, host, describe, topic, t.name)]


def _refused_entry(name: str | None, topic_id: uuid.UUID, refused: Refused) -> dict[str, Any]:
    if name is None:
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id}
    if topic_id != _NO_ID:  # asked by id: ids are not secret (Kafka answers the id, no name)
        return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": None, "topic_id": topic_id}
    return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name}


def _operations_from_acls(
    ctx: ServerContext, req: Request, meta: RequestMeta, body: dict[str, Any], refused: Refused
) -> None:
    """v8+: the authorized operations the caller's ACLs give (AuthHelper.authorizedOperations); the
    cluster's only with DESCRIBE on it (else 0), as KafkaApis sets them."""
    version = meta.api_version
    if 8 <= version <= 10 and req["include_cluster_authorized_operations"]:
        ops = 0
        if authz.cluster_allowed(ctx, meta, 3, AclOperation.DESCRIBE):
            ops = authz.authorized_operations(ctx, meta, ResourceType.CLUSTER, CLUSTER_NAME)
        body["cluster_authorized_operations"] = ops
    if version >= 8 and req["include_topic_authorized_operations"]:
        for topic in body["topics"]:
            name = topic.get("name")
            if name is not None and name not in refused:
                topic["topic_authorized_operations"] = authz.authorized_operations(
                    ctx, meta, ResourceType.TOPIC, name
                )


def broker_entries(ctx: ServerContext, meta: RequestMeta) -> list[dict[str, Any]]:
    """This broker alone, or in cluster mode every listed node (their endpoints on this listener): the
    live ones, and for a while those whose lease lapsed (`Brokers.listed`, docs/compat.md)."""
    if ctx.brokers is None:
        return [broker_entry(ctx, meta)]
    return [
        {"node_id": node_id, "host": host, "port": port, "rack": rack}
        for node_id, host, port, rack in ctx.brokers.listed(meta.listener_name)
    ]


def broker_entry(ctx: ServerContext, meta: RequestMeta) -> dict[str, Any]:
    """This broker as the listener the request arrived on advertises it (issue 25)."""
    endpoint = ctx.endpoint(meta)
    return {"node_id": ctx.node_id, "host": endpoint.host, "port": endpoint.port}


def _topic_entry(
    ctx: ServerContext, name: str, topic: TopicRecord | None, version: int, live: set[int]
) -> dict[str, Any]:
    if topic is None:
        return {"error_code": _missing_error(ctx, name), "name": name}
    entry: dict[str, Any] = {
        "error_code": ErrorCode.NONE,
        "name": name,
        "partitions": [_partition_entry(ctx, name, p, version, live) for p in range(topic.num_partitions)],
    }
    if version >= 10:
        entry["topic_id"] = topic.topic_id
    if name == OFFSETS_TOPIC:  # Topic.isInternal (KafkaApis.getTopicMetadata): v1+ carry the flag
        entry["is_internal"] = version >= 1
    return entry


def _missing_error(ctx: ServerContext, name: str) -> ErrorCode:
    if validate_topic_name(name) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if ctx.topics.is_pending(name):
        return ErrorCode.LEADER_NOT_AVAILABLE  # being created by another request, as Kafka answers
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _partition_entry(
    ctx: ServerContext, name: str, index: int, version: int, live: set[int]
) -> dict[str, Any]:
    """The leader from `ctx.leadership` (this node on a single node; the lease holder in a cluster,
    whose data every node could read, so the leader is the one replica listed). Without a leader:
    LEADER_NOT_AVAILABLE with leader -1 and no replicas in sync, as Kafka answers an offline
    partition (MetadataCache: a leader that is not alive). A leader whose lease has not expired yet
    but who is no longer a live broker (killed) is no leader: clients must never be sent to a broker
    the same response does not list (kafka-python raises UnknownBrokerIdError)."""
    replicas = partition_replicas(ctx.leadership, name, index, live)
    entry: dict[str, Any] = {
        "error_code": ErrorCode.NONE if replicas.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": index,
        "leader_id": replicas.leader,
        "replica_nodes": replicas.replicas,
        "isr_nodes": replicas.in_sync,
    }
    if version >= 5:
        entry["offline_replicas"] = replicas.offline
    if version >= 7:
        entry["leader_epoch"] = ctx.leadership.leader_epoch(name, index)
    return entry
