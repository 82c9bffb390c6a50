"""OffsetCommit (8), v2-10 (Kafka 4 removed v0-1, KIP-896). v1: generation/member id, commit_timestamp;
v2-4: retention_time_ms; v3: throttle_time_ms; v6: committed_leader_epoch; v7: group_instance_id; v8:
flexible; v10: topics named by id (KIP-848). As KafkaApis.handleOffsetCommitRequest, a v10 topic's name
is looked up from its id first; an id the registry does not know answers UNKNOWN_TOPIC_ID for each of
its partitions, the rest is committed by name as before and answered by id.

As Kafka's KafkaApis does before reaching the coordinator, partitions of topics (or partition
indexes) this broker does not know are answered UNKNOWN_TOPIC_OR_PARTITION here; the rest goes to
the group logic typed (a CommitRequest: what each version carries resolved here), and both answers
are merged into one response.
"""

from __future__ import annotations

import uuid
from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.unknown_partitions import Topics, merge_topics, split_unknown
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.request_stats import OFFSET_COMMIT, RequestStats
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.offset_api import CommitErrors, CommitRequest, PartitionCommit
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType

__all__ = ["commit_request", "handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if meta.api_version >= 10:
        _handle_by_id(ctx, req, meta, respond)
        return
    _handle_named(ctx, req, meta, respond)


def _handle_by_id(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    """v10: names resolved from ids, the answer's topics named by id again."""
    ids: dict[str, uuid.UUID] = {}
    named: Topics = []
    unknown: Topics = []
    for topic in req["topics"]:
        name = ctx.topics.name_for_id(topic["topic_id"])
        if name is None:
            parts = [
                {"partition_index": p["partition_index"], "error_code": _UNKNOWN_ID}
                for p in topic["partitions"]
            ]
            unknown.append({"topic_id": topic["topic_id"], "partitions": parts})
            continue
        ids[name] = topic["topic_id"]
        named.append({**topic, "name": name})

    def by_id(body: dict[str, Any]) -> None:
        topics = [{"topic_id": ids[t["name"]], "partitions": t["partitions"]} for t in body["topics"]]
        respond({"topics": topics + unknown})

    if not named:
        respond({"topics": unknown})
        return
    _handle_named(ctx, {**req, "topics": named}, meta, by_id)


def _handle_named(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if ctx.authorizer is not None:
        _handle_authorized(ctx, req, meta, respond)
        return
    topics: Topics = req["topics"]
    has_partition = ctx.topics.has_partition
    # Plain loops, not comprehensions, on this path: in CPython 3.11 each comprehension is a
    # function call, and a commit is a few microseconds in all.
    for topic in topics:
        name = topic["name"]
        for p in topic["partitions"]:
            if not has_partition(name, p["partition_index"]):
                _handle_with_unknown(ctx, req, meta, respond)
                return
    stats = ctx.stats

    def answer(error: ErrorCode, errors: CommitErrors) -> None:
        if (error or errors) and stats is not None:
            _count(stats, topics, error, errors)
        respond({"topics": _topics(topics, error, errors)})

    ctx.manager.offset_commit(commit_request(req, meta.api_version, topics), answer)


def _handle_authorized(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    """KafkaApis.handleOffsetCommitRequest with an authorizer: READ on the group (else every partition
    GROUP_AUTHORIZATION_FAILED), then READ on each topic before its existence (TOPIC_AUTHORIZATION_FAILED
    per partition, so an unauthorized topic is never revealed to exist)."""
    topics: Topics = req["topics"]
    if not authz.allowed(ctx, meta, OFFSET_COMMIT, AclOperation.READ, ResourceType.GROUP, req["group_id"]):
        respond({"topics": _topics(topics, ErrorCode.GROUP_AUTHORIZATION_FAILED, {})})
        return
    names = [str(t["name"]) for t in topics]
    readable = authz.filter_allowed(ctx, meta, OFFSET_COMMIT, AclOperation.READ, ResourceType.TOPIC, names)
    denied = [t for t in topics if t["name"] not in readable]
    allowed = [t for t in topics if t["name"] in readable]
    _handle_with_unknown(
        ctx, req, meta, respond, allowed, _topics(denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED, {})
    )


def _handle_with_unknown(
    ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, topics: Topics | None = None,
    answered: Topics | None = None,
) -> None:  # fmt: skip
    """Some partition is unknown: answered here, the rest by the group logic, then merged.
    `answered`: partitions already refused (unauthorized topics)."""
    known, unknown = split_unknown(ctx, req["topics"] if topics is None else topics)
    if ctx.stats is not None:
        ctx.stats.partition_errors(OFFSET_COMMIT, _UNKNOWN, sum(len(t["partitions"]) for t in unknown))
        denied = sum(len(t["partitions"]) for t in answered or ())
        ctx.stats.partition_errors(OFFSET_COMMIT, int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), denied)
    unknown = [*(answered or ()), *unknown]
    if not known:
        respond({"topics": unknown})
        return

    def merged(error: ErrorCode, errors: CommitErrors) -> None:
        if (error or errors) and ctx.stats is not None:
            _count(ctx.stats, known, error, errors)
        respond({"topics": merge_topics(_topics(known, error, errors), unknown)})

    ctx.manager.offset_commit(commit_request(req, meta.api_version, known), merged)


def _count(stats: RequestStats, topics: Topics, error: ErrorCode, errors: CommitErrors) -> None:
    """OffsetCommit has no top-level error: the metrics count its partition errors from here."""
    partitions = sum(len(t["partitions"]) for t in topics)
    stats.partition_errors(OFFSET_COMMIT, int(error), partitions - len(errors))
    for code in errors.values():
        stats.partition_errors(OFFSET_COMMIT, int(code), 1)


# Enum members read once: each `ErrorCode.X` costs ~90 ns, on every commit
_GROUP_ID_NOT_FOUND, _ILLEGAL_GENERATION = ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.ILLEGAL_GENERATION
_UNKNOWN = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
_UNKNOWN_ID = int(ErrorCode.UNKNOWN_TOPIC_ID)


def commit_request(req: Request, version: int, topics: Topics) -> CommitRequest:
    """The decoded request holds every field (defaults for those its version lacks)."""
    epochs, timestamps = version >= 6, version == 1  # v1 alone carries a commit timestamp
    parts: list[tuple[str, list[PartitionCommit]]] = []
    for t in topics:
        commits: list[PartitionCommit] = []
        for p in t["partitions"]:
            commits.append(
                (
                    p["partition_index"],
                    p["committed_offset"],
                    p["committed_leader_epoch"] if epochs else -1,
                    p["committed_metadata"] or "",
                    p["commit_timestamp"] if timestamps else -1,
                )
            )
        parts.append((t["name"], commits))
    return CommitRequest(
        req["group_id"],
        req["generation_id_or_member_epoch"],
        req["member_id"],
        req["group_instance_id"],
        req["retention_time_ms"] if 2 <= version <= 4 else -1,
        # Kafka's OffsetMetadataManager.validateOffsetCommit: an unknown group with a generation
        # is GROUP_ID_NOT_FOUND from v9 (KIP-848), ILLEGAL_GENERATION before
        _GROUP_ID_NOT_FOUND if version >= 9 else _ILLEGAL_GENERATION,
        parts,
        version,
    )


def _topics(topics: Topics, error: ErrorCode, errors: CommitErrors) -> Topics:
    """The response's topics, in request order: `error` for every partition but those in `errors`."""
    code = int(error)
    out: Topics = []
    for t in topics:
        name = t["name"]
        partitions = []
        for p in t["partitions"]:
            index = p["partition_index"]
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": int(errors.get((name, index), code)) if errors else code,
                }
            )
        out.append({"name": name, "partitions": partitions})
    return out
