"""AlterShareGroupOffsets (91), v0, flexible (KIP-932): a share group's start offsets set anew.

As Kafka 4.3.1 answers (KafkaApis.handleAlterShareGroupOffsetsRequest, GroupCoordinatorService.
alterShareGroupOffsets, GroupMetadataManager.completeAlterShareGroupOffsets; probed on the broker):
READ on the group (GROUP_AUTHORIZATION_FAILED, top level) and on each topic (TOPIC_AUTHORIZATION_FAILED
per partition); an empty group id INVALID_GROUP_ID; a share group with members NON_EMPTY_GROUP ("The
group is not empty.") at the top level with no topics; topics and partitions this broker does not know
UNKNOWN_TOPIC_OR_PARTITION, listed first; a classic or consumer group under the id GROUP_ID_NOT_FOUND
("Group g is not a share group.") at the top level. The group side writes the altered partitions as
initializing first (GroupMetadataManager.alterShareGroupOffsets: an id nobody holds becomes an empty
share group), then they start again at the given offset with a new state epoch and no in-flight
records (the tenant's `reset`, answered once durable). Kafka takes any offset, negative ones too, and
so does kcoord.
"""

from __future__ import annotations

import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.share_offsets_common import NOT_HOSTED, refusal, tenant, topic_of
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.share.model import TopicPartitionsInfo
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = ["handle"]

API_KEY = 91
Answer = dict[str, Any]


def _entry(index: int, error: ErrorCode, message: str | None = None) -> Answer:
    return {"partition_index": index, "error_code": int(error), "error_message": message}


def _split(
    ctx: ServerContext, meta: RequestMeta, topics: list[Answer]
) -> tuple[list[Answer], list[tuple[str, uuid.UUID, int, dict[int, int]]]]:
    """(answered at once: refused and unknown topics; the known ones: name, id, partition count and the
    offsets asked for, in the request's order)."""
    names = [str(t["topic_name"]) for t in topics]
    ok = (
        authz.filter_allowed(ctx, meta, API_KEY, AclOperation.READ, ResourceType.TOPIC, names)
        if ctx.authorizer is not None
        else set(names)
    )
    answered: list[Answer] = []
    known: list[tuple[str, uuid.UUID, int, dict[int, int]]] = []
    for topic in topics:
        name, found = str(topic["topic_name"]), topic_of(ctx, str(topic["topic_name"]))
        offsets = {int(p["partition_index"]): int(p["start_offset"]) for p in topic["partitions"]}
        if name not in ok or found is None:
            error, message = (
                (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                if name not in ok
                else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
            )
            entries = [_entry(p, error, message) for p in offsets]
            answered.append({"topic_name": name, "topic_id": ZERO_UUID, "partitions": entries})
        else:
            known.append((name, found[0], found[1], offsets))
    return answered, known


def _partitions(
    topic_id: uuid.UUID, count: int, offsets: dict[int, int], errors: dict[tuple[uuid.UUID, int], ErrorCode]
) -> list[Answer]:
    """A known topic's partitions in the request's order: one it does not have is unknown."""
    return [
        _entry(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
        if p >= count
        else _entry(p, errors.get((topic_id, p), ErrorCode.NONE))
        for p in offsets
    ]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    group_id = str(req["group_id"])
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, API_KEY, AclOperation.READ, ResourceType.GROUP, group_id
    ):
        respond({"error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED), "responses": []})
        return
    refused = refusal(ctx, group_id, must_exist=False, must_be_empty=True)
    partitions = tenant(ctx)
    if refused is None and partitions is None:
        refused = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    if refused is not None:
        respond({"error_code": int(refused[0]), "error_message": refused[1], "responses": []})
        return
    answered, known = _split(ctx, meta, list(req["topics"]))
    offsets = {
        (topic_id, p): offset
        for _, topic_id, count, parts in known
        for p, offset in parts.items()
        if p < count
    }

    def done(errors: dict[tuple[uuid.UUID, int], ErrorCode]) -> None:
        reset = [
            {
                "topic_name": name,
                "topic_id": topic_id,
                "partitions": _partitions(topic_id, count, parts, errors),
            }
            for name, topic_id, count, parts in known
        ]
        respond({"error_code": 0, "error_message": None, "responses": answered + reset})

    def reset(error: ErrorCode | None) -> None:
        if error is not None:  # the group side's write failed: nothing was reset
            respond({"error_code": int(error), "error_message": None, "responses": []})
            return
        assert partitions is not None
        partitions.reset(group_id, offsets, done)

    altered = {
        topic_id: TopicPartitionsInfo(topic_id, name, frozenset(p for p in parts if p < count))
        for name, topic_id, count, parts in known
        if any(p < count for p in parts)
    }
    ctx.manager.share.alter_offsets(group_id, altered, reset)
