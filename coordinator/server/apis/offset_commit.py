"""OffsetCommit (8), v0-9. v1: generation/member id, commit_timestamp; v2-4: retention_time_ms;
v3: throttle_time_ms; v6: committed_leader_epoch; v7: group_instance_id; v8: flexible.

As Kafka's KafkaApis does before reaching the coordinator, partitions of topics (or partition
indexes) this broker does not know are answered UNKNOWN_TOPIC_OR_PARTITION here; the rest goes to
the group logic typed (a CommitRequest: what each version carries resolved here), and both answers
are merged into one response.
"""

from __future__ import annotations

from coordinator.groups.errors import ErrorCode
from coordinator.groups.offset_api import CommitErrors, CommitRequest, PartitionCommit
from coordinator.metrics import OFFSET_COMMIT, RequestStats
from coordinator.server.apis.unknown_partitions import Topics, merge_topics, split_unknown
from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["commit_request", "handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    known, unknown = split_unknown(ctx, req["topics"])
    if unknown and ctx.stats is not None:
        ctx.stats.partition_errors(OFFSET_COMMIT, _UNKNOWN, sum(len(t["partitions"]) for t in unknown))
    if not unknown:  # the common case: every partition known, nothing to merge

        def answer(error: ErrorCode, errors: CommitErrors) -> None:
            if (error or errors) and ctx.stats is not None:
                _count(ctx.stats, known, error, errors)
            respond({"topics": _topics(known, error, errors)})

        ctx.manager.offset_commit(commit_request(req, meta.api_version, known), answer)
        return
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


def commit_request(req: Request, version: int, topics: Topics) -> CommitRequest:
    """The decoded request holds every field (defaults for those its version lacks)."""
    epochs, timestamps = version >= 6, version == 1  # v1 alone carries a commit timestamp
    parts: list[tuple[str, list[PartitionCommit]]] = [
        (
            t["name"],
            [
                (
                    p["partition_index"],
                    p["committed_offset"],
                    p["committed_leader_epoch"] if epochs else -1,
                    p["committed_metadata"] or "",
                    p["commit_timestamp"] if timestamps else -1,
                )
                for p in t["partitions"]
            ],
        )
        for t in topics
    ]
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
    if not errors:
        return [
            {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                               for p in t["partitions"]]}
            for t in topics
        ]  # fmt: skip
    return [
        {
            "name": t["name"],
            "partitions": [
                {
                    "partition_index": p["partition_index"],
                    "error_code": int(errors.get((t["name"], p["partition_index"]), code)),
                }
                for p in t["partitions"]
            ],
        }
        for t in topics
    ]
