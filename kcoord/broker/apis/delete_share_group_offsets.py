"""DeleteShareGroupOffsets (92), v0, flexible (KIP-932): a share group forgets the state of topics.

As Kafka 4.3.1 answers (KafkaApis.handleDeleteShareGroupOffsetsRequest, GroupCoordinatorService.
deleteShareGroupOffsets, GroupMetadataManager.sharePartitionsEligibleForOffsetDeletion; probed on the
broker): DELETE on the group (GROUP_AUTHORIZATION_FAILED, top level) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED for the topic); an empty id INVALID_GROUP_ID; a group that does not exist
GROUP_ID_NOT_FOUND ("Group <id> not found."); a share group with members NON_EMPTY_GROUP, both at the
top level with no topics; a topic this broker does not know UNKNOWN_TOPIC_OR_PARTITION, after the known
ones; every share partition of a known topic is forgotten (the tenant's `delete`, with tombstones,
answered once durable), one error per topic.
"""

from __future__ import annotations

import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.share_offsets_common import NOT_HOSTED, refusal, share_partitions_of, tenant, topic_of
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = ["handle"]

API_KEY = 92


def _entry(name: str, topic_id: uuid.UUID, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": topic_id, "error_code": int(error), "error_message": message}


def _refused(ctx: ServerContext, meta: RequestMeta, group_id: str) -> tuple[ErrorCode, str | None] | None:
    if ctx.authorizer is not None and not authz.allowed(
        ctx, meta, API_KEY, AclOperation.DELETE, ResourceType.GROUP, group_id
    ):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    refused = refusal(ctx, group_id, must_exist=True, must_be_empty=True)
    if refused is None and tenant(ctx) is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return refused


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    group_id = str(req["group_id"])
    if (refused := _refused(ctx, meta, group_id)) is not None:
        respond({"error_code": int(refused[0]), "error_message": refused[1], "responses": []})
        return
    names = list(dict.fromkeys(str(t["topic_name"]) for t in req["topics"]))
    ok = (
        authz.filter_allowed(ctx, meta, API_KEY, AclOperation.READ, ResourceType.TOPIC, names)
        if ctx.authorizer is not None
        else set(names)
    )
    known = [(name, found[0]) for name in names if name in ok and (found := topic_of(ctx, name)) is not None]
    late = [
        _entry(n, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if n not in ok
        else _entry(n, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
        for n in names
        if n not in ok or topic_of(ctx, n) is None
    ]
    ids = {topic_id for _, topic_id in known}
    wanted = [(topic_id, p) for topic_id, p in share_partitions_of(ctx, group_id) if topic_id in ids]

    def done(errors: dict[tuple[uuid.UUID, int], ErrorCode]) -> None:
        def of(topic_id: uuid.UUID) -> ErrorCode:
            return next((e for (t, _), e in errors.items() if t == topic_id and e), ErrorCode.NONE)

        ctx.manager.share.complete_offsets_deletion(group_id, {t for t in ids if of(t) is ErrorCode.NONE})

        deleted = [_entry(name, topic_id, of(topic_id)) for name, topic_id in known]
        respond({"error_code": 0, "error_message": None, "responses": deleted + late})

    partitions = tenant(ctx)
    assert partitions is not None
    # The group side's DeletingTopics first (sharePartitionsEligibleForOffsetDeletion), then the state.
    ctx.manager.share.start_offsets_deletion(group_id, ids)
    partitions.delete(group_id, wanted, done)
