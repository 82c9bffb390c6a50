"""Partitions this broker does not know, answered before the group logic sees a request.

Kafka's KafkaApis does this for OffsetCommit (handleOffsetCommitRequest) and OffsetDelete
(handleDeleteOffsetsRequest): a topic or partition missing from the metadata cache gets
UNKNOWN_TOPIC_OR_PARTITION, the rest goes to the coordinator, and the two answers are merged.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker.context import ServerContext
from kcoord.broker.topics.offsets_topic import has_partition
from kcoord.protocol.errors import ErrorCode

__all__ = ["Topics", "merge_topics", "split_unknown"]

Topics = list[dict[str, Any]]


def split_unknown(ctx: ServerContext, topics: Topics) -> tuple[Topics, Topics]:
    """(request topics with known partitions, response entries for the unknown ones)."""
    known: Topics = []
    unknown: Topics = []
    for topic in topics:
        name = str(topic["name"])
        parts: list[dict[str, Any]] = topic["partitions"]
        good = [
            p for p in parts if has_partition(ctx.topics, ctx.data.offsets, name, int(p["partition_index"]))
        ]
        if len(good) == len(parts):
            known.append(topic)
            continue
        if good:
            known.append({**topic, "partitions": good})
        unknown.append(
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    }
                    for p in parts
                    if p not in good
                ],
            }
        )
    return known, unknown


def merge_topics(answered: Topics, unknown: Topics) -> Topics:
    by_name = {str(t["name"]): t for t in unknown}
    out: Topics = []
    for topic in answered:
        extra = by_name.pop(str(topic["name"]), None)
        if extra is None:
            out.append(topic)
        else:
            out.append({**topic, "partitions": [*topic["partitions"], *extra["partitions"]]})
    return out + list(by_name.values())
