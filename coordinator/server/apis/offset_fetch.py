"""OffsetFetch (9), v0-9. v2: null topics = all, top-level error_code; v5: leader epoch; v6: flexible; v7:
require_stable; v8: batched groups (KIP-709).

Typed at the door: the group logic takes (group id, topics or None) pairs and answers one result
per group; this module shapes them for the version. v0-1 have no top-level error: Kafka copies the
group error into every partition; from v2 a group error carries no topics (Kafka's
OffsetFetchResponse).
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.errors import ErrorCode
from coordinator.groups.offset_api import FetchedOffset, FetchGroup, FetchResult, FetchTopics
from coordinator.server.context import Request, RequestMeta, Respond, ServerContext

__all__ = ["handle"]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
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

    ctx.manager.offset_fetch(groups, version >= 7 and req["require_stable"], answer, members)


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
