"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77) v1 against Kafka's own encoding: the bodies
below were written by Kafka 4.3.1's generated classes (`MessageUtil.toByteBufferAccessor(message, 1)`
with kafka-clients-4.3.1.jar); kafka-python has no classes for these APIs. Each decodes to the fields
given and encodes back to the same bytes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS

T = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
ASSIGNED = {"topic_partitions": [{"topic_id": T, "partitions": [0, 2]}]}
MEMBER = {
    "member_id": "m-1",
    "rack_id": None,
    "member_epoch": 3,
    "client_id": "c",
    "client_host": "/h",
    "subscribed_topic_names": ["a"],
    "assignment": {"topic_partitions": [{"topic_id": T, "topic_name": "a", "partitions": [1]}]},
}
STABLE = {
    "error_code": 0,
    "error_message": None,
    "group_id": "g",
    "group_state": "Stable",
    "group_epoch": 3,
    "assignment_epoch": 3,
    "assignor_name": "simple",
    "members": [MEMBER],
    "authorized_operations": 3400,
}
MISSING = {
    "error_code": 69,
    "error_message": "Group h not found.",
    "group_id": "h",
    "group_state": "",
    "group_epoch": 0,
    "assignment_epoch": 0,
    "assignor_name": "",
    "members": [],
    "authorized_operations": -(2**31),
}

CASES: list[tuple[str, int, bool, str, dict[str, Any]]] = [
    (
        "join",
        76,
        True,
        "0267046d2d31000000000272030261026200",
        {
            "group_id": "g",
            "member_id": "m-1",
            "member_epoch": 0,
            "rack_id": "r",
            "subscribed_topic_names": ["a", "b"],
        },
    ),
    (
        "steady",
        76,
        True,
        "0267046d2d3100000003000000",
        {
            "group_id": "g",
            "member_id": "m-1",
            "member_epoch": 3,
            "rack_id": None,
            "subscribed_topic_names": None,
        },
    ),
    (
        "assigned",
        76,
        False,
        "00000000000000046d2d31000000030000138801020102030405060708090a0b0c0d0e0f10030000000000000002000000",
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "member_id": "m-1",
            "member_epoch": 3,
            "heartbeat_interval_ms": 5000,
            "assignment": ASSIGNED,
        },
    ),
    (
        "fenced",
        76,
        False,
        "00000000006e0766656e636564000000000000000000ff00",
        {
            "throttle_time_ms": 0,
            "error_code": 110,
            "error_message": "fenced",
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        },
    ),
    (
        "describe",
        77,
        True,
        "03026702680100",
        {"group_ids": ["g", "h"], "include_authorized_operations": True},
    ),
    (
        "described",
        77,
        False,
        "0000000003000000026707537461626c6500000003000000030773696d706c6502046d2d3100000000030263032f6802026102"
        "0102030405060708090a0b0c0d0e0f100261020000000100000000000d480000451347726f75702068206e6f7420666f756e64"
        "2e02680100000000000000000101800000000000",
        {"throttle_time_ms": 0, "groups": [STABLE, MISSING]},
    ),
]


@pytest.mark.parametrize(
    ("api_key", "request_", "hex_body", "fields"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_kafkas_bytes_decode_and_encode_back(
    api_key: int, request_: bool, hex_body: str, fields: dict[str, Any]
) -> None:
    schema = (REQUEST_SCHEMAS if request_ else RESPONSE_SCHEMAS)[api_key]
    codec = codec_for(schema, 1)
    body = bytes.fromhex(hex_body)
    assert _plain(codec.parse(body)) == fields
    assert codec.build(fields) == body


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
