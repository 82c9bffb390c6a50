"""DeleteTopics (20), v0-6. v1: throttle_time_ms; v4: flexible; v5: error_message; v6: topics by
name or topic_id (`topics` replaces `topic_names`).

Deleting a topic deletes its committed offsets in every group (Kafka's onPartitionsDeleted): the group
logic writes those tombstones first, then the topic tombstones go to the same ordered log, so once
the topic deletion is durable the offset deletions are too, and a re-created topic never sees old
offsets. Once the tombstones are durable the topics' partition logs are deleted, then the request is
answered (a crash in between leaves files that startup removes, `TopicData.remove_orphans`). A storage
failure answers KAFKA_STORAGE_ERROR (retriable).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import internal_topic
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

_NO_ID = uuid.UUID(int=0)
Result = dict[str, Any]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    requested = _requested(req, version)
    if ctx.authorizer is not None:
        results = [_refused(ctx, meta, name, topic_id) or _check(ctx, name, topic_id, version)
                   for name, topic_id in requested]  # fmt: skip
    else:
        results = [_check(ctx, name, topic_id, version) for name, topic_id in requested]
    doomed = list(dict.fromkeys(str(r["name"]) for r in results if r["error_code"] == ErrorCode.NONE))
    if not doomed:
        respond({"responses": results})
        return

    def durable(error: BaseException | None) -> None:
        if error is None:
            task = asyncio.ensure_future(ctx.data.delete(doomed))
            task.add_done_callback(lambda _: respond({"responses": results}))
            return
        for result in results:
            if result["error_code"] == ErrorCode.NONE:
                result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                if version >= 5:
                    result["error_message"] = f"storage failure: {error}"
        respond({"responses": results})

    ctx.manager.delete_topics(doomed)
    ctx.topics.delete(doomed, durable)


def _requested(req: Request, version: int) -> list[tuple[str | None, uuid.UUID]]:
    if version >= 6:
        return [(t["name"], t["topic_id"]) for t in req["topics"]]
    return [(str(name), _NO_ID) for name in req["topic_names"]]


def _check(ctx: ServerContext, name: str | None, topic_id: uuid.UUID, version: int) -> Result:
    if (internal := internal_topic(ctx.data.offsets, name, topic_id)) is not None:
        # Kafka (KRaft) deletes and re-creates its own; kcoord's is the coordinator log's view (compat.md).
        message = f"Cannot delete internal topic {internal.name}: it is a view of the coordinator log."
        return _result(internal.name, topic_id, ErrorCode.INVALID_TOPIC_EXCEPTION, message, version)
    if name is None:  # v6: by id
        name = ctx.topics.name_for_id(topic_id)
        if name is None:
            return _result(
                None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "The topic id does not exist.", version
            )
    topic = ctx.topics.get(name)
    if topic is None or ctx.topics.is_pending(name):
        return _result(
            name,
            topic_id,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "This server does not host this topic-partition.",
            version,
        )
    if topic_id != _NO_ID and topic_id != topic.topic_id:
        return _result(name, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "The topic id does not match.", version)
    return _result(name, topic.topic_id if version >= 6 else _NO_ID, ErrorCode.NONE, None, version)


def _result(
    name: str | None, topic_id: uuid.UUID, error: ErrorCode, message: str | None, version: int
) -> Result:
    result: Result = {"name": name, "error_code": error}
    if version >= 6:
        result["topic_id"] = topic_id
    if version >= 5:
        result["error_message"] = message
    return result


def _refused(ctx: ServerContext, meta: RequestMeta, name: str | None, topic_id: uuid.UUID) -> Result | None:
    """ControllerApis.deleteTopics: DELETE on the cluster, else DESCRIBE and DELETE on the topic. By name,
    an undescribable topic is TOPIC_AUTHORIZATION_FAILED whether or not it exists; by id, the name is
    answered only if the caller may describe it."""
    authorizer = ctx.authorizer
    assert authorizer is not None
    principal, host = meta.principal, meta.client_host
    if authorizer.authorize(principal, host, AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    by_id = name is None
    resolved = ctx.topics.name_for_id(topic_id) if by_id else name
    if resolved is None:
        return None  # an unknown id: UNKNOWN_TOPIC_ID (ids are not secret)
    describable = authz.allowed(ctx, meta, 20, AclOperation.DESCRIBE, ResourceType.TOPIC, resolved)
    if not by_id and not describable:
        return _denied(resolved, topic_id, meta.api_version)
    if authz.allowed(ctx, meta, 20, AclOperation.DELETE, ResourceType.TOPIC, resolved):
        return None
    if not by_id and ctx.topics.get(resolved) is None:
        return None  # describable and missing: the existence error comes first
    return _denied(resolved if describable else None, topic_id, meta.api_version)


def _denied(name: str | None, topic_id: uuid.UUID, version: int) -> Result:
    return _result(
        name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.", version
    )
