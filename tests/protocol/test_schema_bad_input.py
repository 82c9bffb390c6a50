"""Malformed bytes into every derived decoder (responses, records and consumer-protocol formats too:
test_fuzz_requests covers the request decoders) and into the frame header: DecodeError, nothing else.

A strict prefix of a valid encoding can never decode: the decoder reads the same fields in the same
order and must run out of bytes. So every prefix of every generated message is a DecodeError.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.protocol import construct_codec
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.consumer_protocol import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.frames import decode_request, decode_response, encode_request
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from kcoord.protocol.messages import records as rec
from kcoord.protocol.schema import Schema
from tests.protocol.test_messages_roundtrip import message_strategy

RECORD_SCHEMAS = [
    schema for schema in vars(rec).values() if isinstance(schema, Schema) and schema.versions is not None
]
CASES = [
    (schema, version)
    for registry in (REQUEST_SCHEMAS, RESPONSE_SCHEMAS)
    for _, schema in sorted(registry.items())
    for version in schema.versions
] + [
    (schema, version)
    for schema in (CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT, *RECORD_SCHEMAS)
    for version in (schema.versions or range(4))
]
IDS = [f"{schema.name}-v{version}" for schema, version in CASES]


def _decode(parse: Any, data: bytes) -> dict[str, Any] | None:
    """The message, or None for a DecodeError; any other exception fails the test."""
    try:
        message = parse(data)
    except DecodeError:
        return None
    assert isinstance(message, dict)
    return message


@pytest.mark.parametrize(("schema", "version"), CASES, ids=IDS)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_prefix_of_a_valid_message_is_a_decode_error(
    schema: Schema, version: int, data: st.DataObject
) -> None:
    codec = codec_for(schema, version)
    encoded = codec.build(data.draw(message_strategy(schema, version)))
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            codec.parse(encoded[:cut])


@st.composite
def _mangled(draw: st.DrawFn) -> tuple[Schema, int, bytes]:
    schema, version = draw(st.sampled_from(CASES))
    encoded = bytearray(codec_for(schema, version).build(draw(message_strategy(schema, version))))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, max(len(encoded) - 1, 0)))
        encoded[position : position + 1] = draw(st.sampled_from([b"\xff", b"\x80", b"\x7f", b"\xff\xff"]))
    return schema, version, bytes(encoded)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_mangled())
def test_mangled_messages_raise_only_decode_error_and_both_codecs_agree(
    case: tuple[Schema, int, bytes],
) -> None:
    schema, version, data = case
    fast = _decode(codec_for(schema, version).parse, data)
    assert fast == _decode(lambda d: construct_codec.parse(schema, version, d), data)


HEARTBEAT = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00\x0c",
        struct.pack(">hhi", 12, 4, 1),  # no client_id at all
        struct.pack(">hhih", 12, 4, 1, 5) + b"ab",  # client_id runs past the end
        struct.pack(">hhih", 12, 4, 1, -2),  # negative client_id length
        struct.pack(">hhih", 12, 4, 1, 2) + b"\xc3\x28" + b"\x00",  # invalid UTF-8 client_id
        struct.pack(">hhih", 12, 4, 1, -1),  # flexible header without its tag section
        struct.pack(">hhih", 12, 4, 1, -1) + b"\x80\x80\x80\x80\x80\x01",  # 6-byte varint tag count
        struct.pack(">hhih", 12, 4, 1, -1) + b"\x01\x00\x7f",  # header tag runs past the end
    ],
)
def test_malformed_request_headers_are_decode_errors(payload: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_request(payload)


def test_unknown_header_tags_are_skipped() -> None:
    frame = encode_request(12, 4, 7, HEARTBEAT)[4:]
    client_end = 10 + struct.unpack_from(">h", frame, 8)[0]
    assert frame[client_end] == 0
    tagged = frame[:client_end] + b"\x01\x05\x02hi" + frame[client_end + 1 :]
    header, body = decode_request(memoryview(tagged))
    assert header.correlation_id == 7 and body == HEARTBEAT


def test_malformed_response_headers_are_decode_errors() -> None:
    for payload in (b"", b"\x00\x00\x00", b"\x00\x00\x00\x01"):  # v1 header misses its tag section
        with pytest.raises(DecodeError):
            decode_response(12, 4, payload)
