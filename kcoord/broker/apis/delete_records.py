"""DeleteRecords (21), v0-2. v2: flexible.

Kafka's `ReplicaManager.deleteRecords` / `UnifiedLog.deleteOldSegments`: each partition's log start
offset moves up to the requested offset (-1 = the high watermark), durably, and whole segments below
it are deleted; the answer is the new log start offset (`low_watermark`). An offset above the high
watermark is OFFSET_OUT_OF_RANGE; an unknown partition UNKNOWN_TOPIC_OR_PARTITION; a failed write
KAFKA_STORAGE_ERROR. Answered once every partition's new start is durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

_HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
Entry = dict[str, Any]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics: list[Entry] = []
    futures: list[tuple[asyncio.Future[int], Entry]] = []
    deletable: set[str] | None = None
    if ctx.authorizer is not None:  # KafkaApis.handleDeleteRecordsRequest: DELETE on each topic first
        names = [str(topic["name"]) for topic in req["topics"]]
        deletable = authz.filter_allowed(ctx, meta, 21, AclOperation.DELETE, ResourceType.TOPIC, names)
    for topic in req["topics"]:
        name = str(topic["name"])
        partitions: list[Entry] = []
        topics.append({"name": name, "partitions": partitions})
        for part in topic["partitions"]:
            entry: Entry = {"partition_index": int(part["partition_index"]), "low_watermark": -1}
            partitions.append(entry)
            if deletable is not None and name not in deletable:
                entry["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            future = _delete(ctx, name, entry, int(part["offset"]))
            if future is not None:
                futures.append((future, entry))
    body: dict[str, object] = {"topics": topics}
    if not futures:
        respond(body)
        return
    outstanding = [len(futures)]
    for future, entry in futures:
        future.add_done_callback(_on_done(entry, outstanding, lambda: respond(body)))


def _delete(ctx: ServerContext, name: str, entry: Entry, offset: int) -> asyncio.Future[int] | None:
    if name == OFFSETS_TOPIC:
        # ReplicaManager.deleteRecordsOnLocalLog (Topic.isInternal, by name, before the partition)
        entry["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
        return None
    log = ctx.data.log(name, entry["partition_index"])
    if log is None:
        entry["error_code"] = ctx.data.missing(name, entry["partition_index"])
        return None
    target = log.high_watermark if offset == _HIGH_WATERMARK else offset
    if target < 0 or target > log.high_watermark:
        entry["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
        return None
    entry["error_code"] = ErrorCode.NONE
    return log.delete_records(target)


def _on_done(
    entry: Entry, outstanding: list[int], finish: Callable[[], None]
) -> Callable[[asyncio.Future[int]], None]:
    def done(future: asyncio.Future[int]) -> None:
        if future.cancelled() or future.exception() is not None:
            entry["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        else:
            entry["low_watermark"] = future.result()
        outstanding[0] -= 1
        if outstanding[0] == 0:
            finish()

    return done
