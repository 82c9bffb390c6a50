"""What the connection-order tests share (test_connection_order*.py): the server they run against, the
pipelined send, the request bodies and the readers of the answers."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from tests.kcoord_process import KcoordServer
from tests.server.wire import create_topic, read_frame

Request = tuple[int, int, dict[str, Any]]  # api key, version, body
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
LATEST, EARLIEST = -1, -2  # ListOffsetsRequest.LATEST_TIMESTAMP / EARLIEST_TIMESTAMP
TOPIC_RESOURCE, LITERAL, ANY, READ, ALLOW = 2, 3, 1, 3, 3  # ConfigResource / ACL codes


def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    """A server for one test module: every write fsynced (`--fsync always`, so a write takes effect
    after a file write in a thread), the standard authorizer with ANONYMOUS (the plaintext principal)
    as its super user, so every API is allowed."""
    data = tmp_path_factory.mktemp("order") / "data"
    proc = KcoordServer(
        data, "--fsync", "always", "--authorizer", "standard", "--super-users", "User:ANONYMOUS"
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))


def pipelined(sock: socket.socket, *requests: Request) -> list[dict[str, Any]]:
    """Every request in one send; the responses in order (none for a Produce with acks=0)."""
    sock.sendall(b"".join(encode_request(k, v, 100 + i, b) for i, (k, v, b) in enumerate(requests)))
    answers = []
    for i, (api_key, version, body) in enumerate(requests):
        if api_key == PRODUCE and body["acks"] == 0:
            continue
        correlation_id, response = decode_response(api_key, version, read_frame(sock))
        assert correlation_id == 100 + i
        answers.append(response)
    return answers


# -- request bodies ------------------------------------------------------------------------------------
def produce(topic: str, records: bytes, acks: int = -1, tid: str | None = None) -> Request:
    data = [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]
    return PRODUCE, 9, {"transactional_id": tid, "acks": acks, "timeout_ms": 5000, "topic_data": data}


def fetch(topic: str, offset: int = 0, committed: bool = False, wait_ms: int = 0) -> Request:
    partition = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    body = {
        "max_wait_ms": wait_ms,
        "min_bytes": 1 if wait_ms else 0,
        "max_bytes": 1 << 20,
        "isolation_level": int(committed),
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [partition]}],
        "forgotten_topics_data": [],
    }
    return FETCH, 12, body


def list_offsets(topic: str, timestamp: int, committed: bool = False) -> Request:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
    body = {
        "replica_id": -1,
        "isolation_level": int(committed),
        "topics": [{"name": topic, "partitions": [partition]}],
    }
    return LIST_OFFSETS, 7, body


def metadata(*topics: str) -> Request:
    wanted = [{"name": name, "topic_id": uuid.UUID(int=0)} for name in topics]
    return METADATA, 12, {"topics": wanted, "allow_auto_topic_creation": False}


def offset_commit(group: str, topic: str, offset: int) -> Request:
    partition = {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1}
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{**partition, "committed_metadata": None}]}],
    }
    return OFFSET_COMMIT, 8, body


def offset_fetch(group: str, topic: str, require_stable: bool = False) -> Request:
    groups = [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}]
    return OFFSET_FETCH, 8, {"groups": groups, "require_stable": require_stable}


def describe_configs(topic: str) -> Request:
    resource = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": topic,
        "configuration_keys": ["retention.ms"],
    }
    return 32, 4, {"resources": [resource], "include_synonyms": False, "include_documentation": False}


def acl_filter(name: str) -> dict[str, Any]:
    return {
        "resource_type_filter": TOPIC_RESOURCE,
        "resource_name_filter": name,
        "pattern_type_filter": LITERAL,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY,
        "permission_type": ANY,
    }


def describe_groups(group: str) -> Request:
    return 15, 5, {"groups": [group], "include_authorized_operations": False}


LIST_GROUPS: Request = (16, 5, {"states_filter": [], "types_filter": []})


# -- answers -------------------------------------------------------------------------------------------
def partition_of(response: dict[str, Any], responses: str = "responses") -> dict[str, Any]:
    return response[responses][0]["partitions"][0]  # type: ignore[no-any-return]


def committed(response: dict[str, Any]) -> tuple[int, int]:
    """(error code, committed offset) of OffsetFetch v8's only partition."""
    (group,) = response["groups"]
    assert group["error_code"] == ErrorCode.NONE
    part = group["topics"][0]["partitions"][0]
    return part["error_code"], part["committed_offset"]


def retention_ms(response: dict[str, Any]) -> str:
    (result,) = response["results"]
    assert result["error_code"] == ErrorCode.NONE
    return next(c["value"] for c in result["configs"] if c["name"] == "retention.ms")  # type: ignore[no-any-return]


def topic(sock: socket.socket, name: str, partitions: int = 1) -> str:
    assert create_topic(sock, name, partitions)["error_code"] == ErrorCode.NONE
    return name
