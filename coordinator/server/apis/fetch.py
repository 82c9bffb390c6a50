"""Fetch (1), v4-12 (whatever protocol serves; >= 13 would need topic ids everywhere).
v4: isolation_level, last_stable_offset, aborted_transactions; v5: log_start_offset; v7: fetch
sessions (session_id/epoch, top-level error_code); v11: rack_id, preferred_read_replica; v12: flexible.

Partitions hold no records yet (the data plane is a later issue): high watermark = log start = 0.
A fetch at offset 0 of a known partition waits `max_wait_ms` (as Kafka's DelayedFetch does when
min_bytes is not reached) and returns an empty record set, encoded as zero bytes rather than null
(librdkafka rejects a null MessageSet). Any other offset is OFFSET_OUT_OF_RANGE, unknown partitions
UNKNOWN_TOPIC_OR_PARTITION, and a response with an error is sent at once, as Kafka does.
Fetch sessions are not implemented: session_id 0 makes every client fall back to full fetches.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext
from protocol.errors import ErrorCode

__all__ = ["handle"]

# Upper bound on one parked fetch, whatever the client asks (clients send ~100-500 ms).
MAX_WAIT_MS = 30_000


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics = []
    any_error = False
    for topic in req["topics"]:
        name = str(topic["topic"])
        partitions = []
        for part in topic["partitions"]:
            error = _check(ctx, name, int(part["partition"]), int(part["fetch_offset"]))
            any_error = any_error or error != ErrorCode.NONE
            partitions.append(_partition(int(part["partition"]), error, meta.api_version))
        topics.append({"topic": name, "partitions": partitions})
    body: dict[str, Any] = {"responses": topics}
    wait_ms = min(max(int(req["max_wait_ms"]), 0), MAX_WAIT_MS)
    if any_error or not topics or wait_ms == 0 or int(req["min_bytes"]) <= 0 or ctx.shutting_down:
        respond(body)
    else:
        ctx.delayed.add(wait_ms, lambda: respond(body))


def _check(ctx: ServerContext, name: str, partition: int, fetch_offset: int) -> ErrorCode:
    if not ctx.topics.has_partition(name, partition):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if fetch_offset != 0:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return ErrorCode.NONE


def _partition(index: int, error: ErrorCode, version: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"partition_index": index, "error_code": error, "records": b""}
    if error != ErrorCode.NONE:
        entry["high_watermark"] = -1  # Kafka's FetchResponse.partitionResponse for an error
        return entry
    # An empty log starting at 0: high watermark = last stable offset = log start offset = 0.
    entry["high_watermark"] = 0
    if version >= 4:
        entry["last_stable_offset"] = 0
    if version >= 5:
        entry["log_start_offset"] = 0
    return entry
