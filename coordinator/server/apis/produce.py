"""Produce (0), v0-11 (advertised, answered with an error until the data plane exists).
v1: throttle_time_ms; v2: log_append_time_ms; v3: transactional_id; v5: log_start_offset;
v8: record_errors, error_message; v9: flexible.

Why serve it at all: librdkafka derives its MsgVer1/MsgVer2 features (and with them the Fetch
version it sends) from Produce *and* Fetch being advertised; without Produce a librdkafka consumer
sends a malformed "Fetch v0" in flexible encoding. Kafka 4.0 keeps advertising Produce v0-2 for the
same reason (KAFKA-18659).

Records are not stored yet: every partition answers POLICY_VIOLATION (non-retriable, so producers
fail fast with the message below instead of retrying for delivery.timeout.ms); unknown partitions
answer UNKNOWN_TOPIC_OR_PARTITION. acks=0 requests get no response at all (the connection never
queues one, see connection.py), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.server.context import Request, Respond, ServerContext
from protocol.errors import ErrorCode

__all__ = ["API_KEY", "handle", "wants_response"]

API_KEY = 0
_MESSAGE = "kcoord does not store records yet (the data plane is a later issue)"


def wants_response(req: Request) -> bool:
    return int(req["acks"]) != 0


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    responses = []
    for topic in req["topic_data"]:
        name = str(topic["name"])
        partitions = [_partition(ctx, name, int(p["index"]), version) for p in topic["partition_data"]]
        responses.append({"name": name, "partition_responses": partitions})
    respond({"responses": responses})


def _partition(ctx: ServerContext, name: str, index: int, version: int) -> dict[str, Any]:
    known = ctx.topics.has_partition(name, index)
    entry: dict[str, Any] = {
        "index": index,
        "error_code": ErrorCode.POLICY_VIOLATION if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "base_offset": -1,
    }
    if version >= 8 and known:
        entry["error_message"] = _MESSAGE
    return entry
