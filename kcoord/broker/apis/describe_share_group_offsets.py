"""DescribeShareGroupOffsets (90), v0-1, flexible (KIP-932; v1 adds `lag`, KIP-1226).

As Kafka 4.3.1 answers (KafkaApis.handleDescribeShareGroupOffsetsRequest, GroupCoordinatorService.
describeShareGroupOffsets / describeShareGroupAllOffsets, probed on the broker): DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED for the group alone) and on each topic (TOPIC_AUTHORIZATION_FAILED per
partition); `topics` null describes every partition the group side initialized (a classic or consumer
group has none), with state or not; a group that does not exist is no error (its partitions answer
-1); a partition without state answers start offset -1 and lag -1, and a topic this broker does not
know the zero topic id with the same; leader_epoch is 0 as Kafka's answer (the share state's leader
epoch, never set on one node).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.share_offsets_common import lag, topic_of
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = ["handle"]

API_KEY = 90


def _partition(index: int, start: int, lag_: int, error: ErrorCode = ErrorCode.NONE) -> dict[str, Any]:
    return {"partition_index": index, "start_offset": start, "leader_epoch": 0, "lag": lag_,
            "error_code": int(error), "error_message": None}  # fmt: skip


def _topic(
    ctx: ServerContext, group_id: str, name: str, partitions: list[int], readable: bool
) -> dict[str, Any]:
    found = topic_of(ctx, name)
    topic_id = ZERO_UUID if found is None else found[0]
    if not readable:
        parts = [_partition(p, -1, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in partitions]
    else:
        parts = [_partition(p, *lag(ctx, name, p, group_id, topic_id)) for p in partitions]
    return {"topic_name": name, "topic_id": topic_id, "partitions": parts}


def _all_topics(ctx: ServerContext, group_id: str) -> list[tuple[str, list[int]]]:
    by_topic: dict[uuid.UUID, list[int]] = defaultdict(list)
    # GroupCoordinatorService.describeShareGroupAllOffsets: the group side's initialized partitions
    # (GroupMetadataManager.initializedShareGroupPartitions), then their state; one without state
    # (initialized, never fetched) answers -1 until DeleteShareGroupOffsets removes it.
    for topic_id, partition in ctx.manager.share.initialized_partitions(group_id):
        by_topic[topic_id].append(partition)
    named = [(ctx.topics.name_for_id(topic_id), parts) for topic_id, parts in by_topic.items()]
    return sorted((name, sorted(parts)) for name, parts in named if name is not None)


def _group(ctx: ServerContext, meta: RequestMeta, group: dict[str, Any]) -> dict[str, Any]:
    group_id = str(group["group_id"])
    answer: dict[str, Any] = {"group_id": group_id, "topics": [], "error_code": 0, "error_message": None}
    checking = ctx.authorizer is not None
    if checking and not authz.allowed(
        ctx, meta, API_KEY, AclOperation.DESCRIBE, ResourceType.GROUP, group_id
    ):
        return answer | {"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    if (phase := ctx.manager.group_configs.error(group_id)) is not None:
        return answer | {"error_code": int(phase)}
    wanted = (
        _all_topics(ctx, group_id)
        if group["topics"] is None
        else [(str(t["topic_name"]), [int(p) for p in t["partitions"]]) for t in group["topics"]]
    )
    names = [name for name, _ in wanted]
    ok = (
        authz.filter_allowed(ctx, meta, API_KEY, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        if checking
        else set(names)
    )
    if group["topics"] is None:  # describing everything: the topics the caller may not see are left out
        wanted = [(name, parts) for name, parts in wanted if name in ok]
    topics = [_topic(ctx, group_id, name, parts, name in ok) for name, parts in wanted]
    # Kafka answers the topics it knows first, then the unknown ones (zero topic id)
    answer["topics"] = sorted(topics, key=lambda t: t["topic_id"] == ZERO_UUID)
    return answer


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    groups = [_group(ctx, meta, group) for group in req["groups"]]
    if meta.api_version < 1:  # v0 has no lag: the field keeps its default
        for partition in (p for g in groups for t in g["topics"] for p in t["partitions"]):
            partition["lag"] = -1
    respond({"groups": groups})
