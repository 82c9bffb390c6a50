"""OffsetFetch (9), v1-10 (Kafka 4 removed v0, KIP-896). v2: null topics = all, top-level error_code; v5:
leader epoch; v6: flexible; v7: require_stable; v8: batched groups (KIP-709); v9: member id and epoch
(KIP-848); v10: topics named by id. As KafkaApis.handleOffsetFetchRequest, v10 names are looked up from
the ids first: an unknown id answers UNKNOWN_TOPIC_ID for each of its partitions (after the group's own
checks: a group error carries no topics), the rest is fetched by name and answered by id; an
all-topics fetch leaves out offsets of topics that no longer exist (they have no id to be named by).

Typed at the door: the group logic takes (group id, topics or None) pairs and answers one result
per group; this module shapes them for the version. v0-1 have no top-level error: Kafka copies the
group error into every partition; from v2 a group error carries no topics (Kafka's
OffsetFetchResponse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.offset_api import FetchedOffset, FetchGroup, FetchResult, FetchTopics
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["handle"]

_OFFSET_FETCH = 9
_UNKNOWN_ID = int(ErrorCode.UNKNOWN_TOPIC_ID)


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if meta.api_version >= 10:
        _handle_by_id(ctx, req, meta, respond)
        return
    _handle_named(ctx, req, meta, respond)


def _handle_by_id(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    """v10: each group's topic ids resolved to names; the answer named by id again."""
    unknown: list[list[dict[str, Any]]] = []
    groups = []
    for group in req["groups"]:
        missing: list[dict[str, Any]] = []
        unknown.append(missing)
        topics = group["topics"]
        if topics is not None:
            named = []
            for topic in topics:
                name = ctx.topics.name_for_id(topic["topic_id"])
                if name is None:
                    parts = [
                        _partition(10, p, None) | {"error_code": _UNKNOWN_ID}
                        for p in topic["partition_indexes"]
                    ]
                    missing.append({"topic_id": topic["topic_id"], "partitions": parts})
                else:
                    named.append({**topic, "name": name})
            topics = named
        groups.append({**group, "topics": topics})

    def by_id(body: dict[str, Any]) -> None:
        for group, missing in zip(body["groups"], unknown, strict=True):
            if not group["error_code"]:
                group["topics"] = [*_named_by_id(ctx, group["topics"]), *missing]
        respond(body)

    _handle_named(ctx, {**req, "groups": groups}, meta, by_id)


def _named_by_id(ctx: ServerContext, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for topic in topics:
        found = ctx.topics.get(topic["name"])
        if found is not None:
            out.append({"topic_id": found.topic_id, "partitions": topic["partitions"]})
    return out


def _handle_named(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    members: list[tuple[str | None, int]] | None = None
    if version >= 8:
        groups: list[FetchGroup] = [(g["group_id"], _topics(g["topics"])) for g in req["groups"]]
        if version >= 9:  # KIP-848: checked against consumer-protocol groups
            members = [(g["member_id"], g["member_epoch"]) for g in req["groups"]]
    else:
        groups = [(req["group_id"], _topics(req["topics"]))]

    def answer(results: list[FetchResult]) -> None:
        respond(_response(version, results))

    require_stable = version >= 7 and req["require_stable"]
    if ctx.authorizer is not None:
        _fetch_authorized(ctx, meta, groups, members, require_stable, answer)
        return
    ctx.manager.offset_fetch(groups, require_stable, answer, members)


def _fetch_authorized(
    ctx: ServerContext, meta: RequestMeta, groups: list[FetchGroup],
    members: list[tuple[str | None, int]] | None, require_stable: bool,
    answer: Callable[[list[FetchResult]], None],
) -> None:  # fmt: skip
    """KafkaApis.handleOffsetFetchRequestFromCoordinator: DESCRIBE on each group (else
    GROUP_AUTHORIZATION_FAILED for it), DESCRIBE on each named topic (else its partitions -1 with
    TOPIC_AUTHORIZATION_FAILED); all-topics fetches leave undescribable topics out."""
    refused: dict[int, FetchResult] = {}
    hidden: dict[int, FetchTopics] = {}
    asked: list[int] = []
    for i, (group_id, topics) in enumerate(groups):
        if not authz.allowed(ctx, meta, _OFFSET_FETCH, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            denied = ErrorCode.GROUP_AUTHORIZATION_FAILED  # v0-1 carry it in each requested partition
            refused[i] = (group_id, denied, [(n, [(p, denied) for p in parts]) for n, parts in topics or ()])
            continue
        if topics is not None:
            ok = authz.filter_allowed(ctx, meta, _OFFSET_FETCH, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                      (name for name, _ in topics))  # fmt: skip
            hidden[i] = [(n, parts) for n, parts in topics if n not in ok]
            groups[i] = (group_id, [(n, parts) for n, parts in topics if n in ok])
        asked.append(i)

    def merged(results: list[FetchResult]) -> None:
        by_index = dict(zip(asked, results, strict=True)) | refused
        answer([_visible(ctx, meta, i, by_index[i], hidden) for i in range(len(groups))])

    if not asked:
        merged([])
        return
    chosen = None if members is None else [members[i] for i in asked]
    ctx.manager.offset_fetch([groups[i] for i in asked], require_stable, merged, chosen)


def _visible(ctx: ServerContext, meta: RequestMeta, i: int, result: FetchResult,
             hidden: dict[int, FetchTopics]) -> FetchResult:  # fmt: skip
    group_id, error, topics = result
    if error:
        return result
    if i not in hidden:  # all topics: those the caller may not describe are left out
        names = authz.filter_allowed(ctx, meta, _OFFSET_FETCH, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                     (name for name, _ in topics))  # fmt: skip
        return group_id, error, [t for t in topics if t[0] in names]
    denied: FetchedOffset = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return group_id, error, [*topics, *((n, [(p, denied) for p in parts]) for n, parts in hidden[i])]


def _topics(topics: list[dict[str, Any]] | None) -> FetchTopics | None:
    if topics is None:  # v2+: every committed offset of the group
        return None
    return [(t["name"], t["partition_indexes"]) for t in topics]


def _response(version: int, results: list[FetchResult]) -> dict[str, Any]:
    if version >= 8:
        return {
            "groups": [
                {
                    "group_id": group_id,
                    "topics": [] if error else _entries(version, topics),
                    "error_code": int(error),
                }
                for group_id, error, topics in results
            ]
        }
    ((_, error, topics),) = results
    entries = _entries(version, topics)
    if version < 2:
        if error:
            for entry in entries:
                for partition in entry["partitions"]:
                    partition["error_code"] = int(error)
        return {"topics": entries}
    return {"topics": [] if error else entries, "error_code": int(error)}


def _entries(version: int, topics: list[tuple[str, list[tuple[int, FetchedOffset]]]]) -> list[dict[str, Any]]:
    return [
        {"name": name, "partitions": [_partition(version, index, record) for index, record in parts]}
        for name, parts in topics
    ]


def _partition(version: int, index: int, record: FetchedOffset) -> dict[str, Any]:
    if isinstance(record, ErrorCode):  # UNSTABLE_OFFSET_COMMIT: a pending transactional offset (v7+)
        return _partition(version, index, None) | {"error_code": int(record)}
    entry: dict[str, Any] = {
        "partition_index": index,
        "committed_offset": -1 if record is None else record.offset,
        "metadata": "" if record is None else record.metadata,
        "error_code": 0,
    }
    if version >= 5:
        entry["committed_leader_epoch"] = -1 if record is None else record.leader_epoch
    return entry
