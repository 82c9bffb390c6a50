"""Injected errors (test controls only): a request's answer carrying a Kafka error, in the API's own
response shape for that version.

`error_body(api_key, version, req, code)` answers any served API: the group coordinator's APIs have
their own shapes below; per topic-partition APIs (`PARTITIONED`) give every partition of the request
the error; APIs answering per topic, resource, group or id echo the request's entries with the error;
the rest set the top-level `error_code` of the response (every field else at its default). Where a
fault names a topic or partition, `split()` and `merge()` let the connection serve the rest of the
request normally and add the error entries for the matching partitions to the answer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kcoord.broker.apis.heartbeat import heartbeat_response
from kcoord.broker.apis.join_group import join_body
from kcoord.broker.apis.leave_group import leave_response
from kcoord.broker.apis.sync_group import sync_body
from kcoord.broker.context import Request
from kcoord.coordinator.groups.responses import join_error, sync_error
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.schema import Schema
from kcoord.protocol.types import Array

__all__ = ["PARTITIONED", "PartitionShape", "error_body", "request_groups", "request_partitions"]

Body = dict[str, Any]


def _find_coordinator(version: int, req: Request, code: int) -> Body:
    if version < 4:
        return {"error_code": code, "node_id": -1, "host": "", "port": -1}
    keys = req.get("coordinator_keys") or []
    return {
        "coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code} for k in keys]
    }


def _offset_fetch(version: int, req: Request, code: int) -> Body:
    if version >= 8:
        return {"groups": [{"group_id": g["group_id"], "error_code": code} for g in req.get("groups") or []]}
    if version >= 2:
        return {"error_code": code, "topics": []}
    topics = [
        {"name": t["name"], "partitions": [{"partition_index": p, "committed_offset": -1, "metadata": "",
                                            "error_code": code} for p in t["partition_indexes"]]}
        for t in req.get("topics") or []
    ]  # fmt: skip
    return {"topics": topics}


ErrorBody = Callable[[int, Request, int], Body]
# APIs with an answer of their own shape, by key: the error answer of a request at a version.
SHAPED: dict[int, ErrorBody] = {
    9: _offset_fetch,
    10: _find_coordinator,
    11: lambda version, req, code: join_body(
        version, join_error(ErrorCode(code), str(req.get("member_id") or ""))
    ),
    12: lambda version, req, code: heartbeat_response(ErrorCode(code)),
    13: lambda version, req, code: leave_response(version, ErrorCode(code)),
    14: lambda version, req, code: sync_body(version, sync_error(ErrorCode(code))),
    16: lambda version, req, code: {"error_code": code, "groups": []},
    34: lambda version, req, code: {  # AlterReplicaLogDirsRequest.getErrorResponse
        "results": [
            {
                "topic_name": t["name"],
                "partitions": [{"partition_index": p, "error_code": code} for p in t["partitions"]],
            }
            for d in req.get("dirs") or []
            for t in d["topics"]
        ]
    },
}


@dataclass(frozen=True, slots=True)
class PartitionShape:
    """Where a per-partition API names its partitions in the request and answers them."""

    req_topics: str
    req_parts: str
    req_index: str | None  # None: the request's partitions are plain ints
    resp_topics: str
    resp_parts: str
    resp_index: str
    error_field: str = "error_code"
    topic_key: str = "name"  # the topic's name field in both (Fetch: "topic", and topic_id from v13)


PARTITIONED: dict[int, PartitionShape] = {
    0: PartitionShape("topic_data", "partition_data", "index", "responses", "partition_responses", "index"),
    1: PartitionShape("topics", "partitions", "partition", "responses", "partitions", "partition_index",
                      topic_key="topic"),
    2: PartitionShape("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    8: PartitionShape("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    21: PartitionShape("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    23: PartitionShape("topics", "partitions", "partition", "topics", "partitions", "partition",
                       topic_key="topic"),
    28: PartitionShape("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    61: PartitionShape("topics", "partition_indexes", None, "topics", "partitions", "partition_index"),
}  # fmt: skip
# AddPartitionsToTxn up to v3 (one transaction per request); v4+ answers the top-level error.
_ADD_PARTITIONS_V3 = PartitionShape(
    "v3_and_below_topics", "partitions", None, "results_by_topic_v3_and_below", "results_by_partition",
    "partition_index", "partition_error_code",
)  # fmt: skip

# APIs answering one entry per requested thing: key -> (response array, request array, copied fields).
_ECHO: dict[int, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    3: ("topics", "topics", (("name", "name"), ("topic_id", "topic_id"))),
    15: ("groups", "groups", (("group_id", ""),)),
    19: ("topics", "topics", (("name", "name"),)),
    20: ("responses", "topics", (("name", "name"), ("topic_id", "topic_id"))),
    30: ("results", "creations", ()),
    31: ("filter_results", "filters", ()),
    32: ("results", "resources", (("resource_type", "resource_type"), ("resource_name", "resource_name"))),
    33: ("responses", "resources", (("resource_type", "resource_type"), ("resource_name", "resource_name"))),
    37: ("results", "topics", (("name", "name"),)),
    42: ("results", "groups_names", (("group_id", ""),)),
    44: ("responses", "resources", (("resource_type", "resource_type"), ("resource_name", "resource_name"))),
    65: ("transaction_states", "transactional_ids", (("transactional_id", ""),)),
    69: ("groups", "group_ids", (("group_id", ""),)),
    75: ("topics", "topics", (("name", "name"),)),
}


def _response_schema(api_key: int) -> Schema:
    from kcoord.protocol.messages import RESPONSE_SCHEMAS

    return RESPONSE_SCHEMAS[api_key]


def _item_schema(schema: Schema, name: str) -> Schema:
    for f in schema.fields:
        if f.name == name and isinstance(f.type, Array) and isinstance(f.type.item, Schema):
            return f.type.item
    raise KeyError(f"{schema.name} has no array of structs {name}")


def _carries(schema: Schema, name: str, version: int) -> bool:
    """The field is on the wire at `version` (a default elsewhere: the encoder refuses other values)."""
    flexible = schema.is_flexible(version)
    return any(f.name == name and f.present(version, flexible) for f in schema.fields)


def _shape(api_key: int, version: int) -> PartitionShape | None:
    if api_key == 24:
        return _ADD_PARTITIONS_V3 if version <= 3 else None
    return PARTITIONED.get(api_key)


def error_body(api_key: int, version: int, req: Request, code: int) -> Body:
    """The answer to `req` with every part of it failed with `code`."""
    shaped = SHAPED.get(api_key)
    if shaped is not None:
        return shaped(version, req, code)
    schema = _response_schema(api_key)
    body = schema.defaults()
    if _carries(schema, "error_code", version):
        body["error_code"] = code
    shape = _shape(api_key, version)
    if shape is not None:
        body[shape.resp_topics] = partition_errors(
            api_key, shape, list(req.get(shape.req_topics) or []), code
        )
    elif api_key in _ECHO:
        resp_field, req_field, copied = _ECHO[api_key]
        item = _item_schema(schema, resp_field)
        entries = []
        for requested in req.get(req_field) or []:
            entry = item.defaults()
            entry["error_code"] = code
            for to, source in copied:
                entry[to] = requested if not source else requested.get(source, entry[to])
            entries.append(entry)
        body[resp_field] = entries
    return body


def partition_errors(api_key: int, shape: PartitionShape, topics: Iterable[Request], code: int) -> list[Body]:
    """The answer's topic entries for these request topic entries, every partition failed."""
    schema = _response_schema(api_key)
    topic_item = _item_schema(schema, shape.resp_topics)
    part_item = _item_schema(topic_item, shape.resp_parts)
    out = []
    for topic in topics:
        entry = topic_item.defaults()
        for key in (shape.topic_key, "topic_id"):
            if key in topic and key in entry:
                entry[key] = topic[key]
        parts = []
        for p in topic.get(shape.req_parts) or []:
            part = part_item.defaults()
            part[shape.resp_index] = p if shape.req_index is None else p[shape.req_index]
            part[shape.error_field] = code
            parts.append(part)
        entry[shape.resp_parts] = parts
        out.append(entry)
    return out


def request_partitions(
    api_key: int, version: int, req: Request, name_of: Callable[[Any], str | None]
) -> list[tuple[str, int]] | None:
    """The (topic, partition)s a per-partition request names; None for other APIs. `name_of` turns a
    topic id into its name (Fetch v13+)."""
    shape = _shape(api_key, version)
    if shape is None:
        return None
    out = []
    for topic in req.get(shape.req_topics) or []:
        name = _topic_name(shape, topic, name_of)
        for p in topic.get(shape.req_parts) or []:
            out.append((name, p if shape.req_index is None else p[shape.req_index]))
    return out


def _topic_name(shape: PartitionShape, topic: Request, name_of: Callable[[Any], str | None]) -> str:
    name = topic.get(shape.topic_key) or ""
    if not name and topic.get("topic_id") is not None:
        name = name_of(topic["topic_id"]) or ""
    return str(name)


def split(
    api_key: int,
    version: int,
    req: Request,
    failed: Callable[[str, int], bool],
    name_of: Callable[[Any], str | None],
) -> tuple[Request, list[Request]]:
    """(the request without the partitions `failed` picks, the request topic entries of those)."""
    shape = _shape(api_key, version)
    assert shape is not None
    kept_topics, failed_topics = [], []
    for topic in req.get(shape.req_topics) or []:
        name = _topic_name(shape, topic, name_of)
        index: Callable[[Any], int] = (
            (lambda p: p) if shape.req_index is None else (lambda p: p[shape.req_index])
        )
        parts = topic.get(shape.req_parts) or []
        bad = [p for p in parts if failed(name, index(p))]
        good = [p for p in parts if not failed(name, index(p))]
        if good:
            kept_topics.append({**topic, shape.req_parts: good})
        if bad:
            failed_topics.append({**topic, shape.req_parts: bad})
    rest = copy.copy(req)
    rest[shape.req_topics] = kept_topics
    return rest, failed_topics


def merge(api_key: int, version: int, body: Body, failed_topics: list[Request], code: int) -> Body:
    """The served part's answer with the failed partitions' error entries added."""
    shape = _shape(api_key, version)
    assert shape is not None
    topics = list(body.get(shape.resp_topics) or [])
    for entry in partition_errors(api_key, shape, failed_topics, code):
        key = shape.topic_key if entry.get(shape.topic_key) else "topic_id"
        same = next((t for t in topics if t.get(key) == entry.get(key)), None)
        if same is None:
            topics.append(entry)
        else:
            same[shape.resp_parts] = [*same.get(shape.resp_parts, []), *entry[shape.resp_parts]]
    return {**body, shape.resp_topics: topics}


def request_groups(api_key: int, req: Request) -> list[str]:
    """The groups a request is about (FindCoordinator: only group keys)."""
    if api_key == 10:
        if req.get("key_type", 0) != 0:
            return []
        return list(req.get("coordinator_keys") or []) or [str(req.get("key") or "")]
    if api_key == 9 and req.get("groups"):
        return [g["group_id"] for g in req["groups"] or []]
    if api_key == 15:
        return list(req.get("groups") or [])
    if api_key == 42:
        return list(req.get("groups_names") or [])
    if api_key == 69:
        return list(req.get("group_ids") or [])
    return [str(req.get("group_id") or "")]


def request_topics(api_key: int, req: Request) -> list[str]:
    """Topic names a request without per-partition entries names (Metadata, CreateTopics, ...)."""
    names: list[str] = []
    for field in ("topics", "topic_names"):
        for entry in req.get(field) or []:
            name = entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
            if name:
                names.append(name)
    for resource in req.get("resources") or []:
        if resource.get("resource_type") == 2:  # TOPIC
            names.append(resource.get("resource_name", ""))
    return names
