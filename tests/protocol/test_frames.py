"""Frames and headers: the splitter under arbitrary chunking, header versions, the ApiVersions quirks."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.protocol.errors import DecodeError, FrameTooLarge, UnsupportedVersion
from kcoord.protocol.frames import (
    FrameSplitter,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)

HEARTBEAT, API_VERSIONS, JOIN_GROUP = 12, 18, 11


@settings(max_examples=200, deadline=None)
@given(payloads=st.lists(st.binary(max_size=50), max_size=8), cuts=st.lists(st.integers(1, 20), max_size=40))
def test_the_splitter_reassembles_frames_from_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    splitter = FrameSplitter(max_frame_bytes=100)
    got: list[bytes] = []
    pos = 0
    for cut in [*cuts, len(stream)]:
        got += splitter.feed(stream[pos : pos + cut])
        pos += cut
    assert got == payloads and splitter.buffered == 0


def test_negative_and_oversized_sizes_are_rejected_before_buffering() -> None:
    with pytest.raises(DecodeError):
        FrameSplitter().feed(struct.pack(">i", -5))
    with pytest.raises(FrameTooLarge):
        FrameSplitter().feed(struct.pack(">i", 104857601))
    with pytest.raises(FrameTooLarge):
        FrameSplitter(max_frame_bytes=10).feed(struct.pack(">i", 11))


def test_header_versions_follow_flexibility_and_api_versions_responses_use_v0() -> None:
    assert request_header_version(HEARTBEAT, 3) == 1 and request_header_version(HEARTBEAT, 4) == 2
    assert response_header_version(HEARTBEAT, 3) == 0 and response_header_version(HEARTBEAT, 4) == 1
    assert response_header_version(API_VERSIONS, 3) == 0


def test_a_flexible_request_keeps_a_legacy_client_id_and_round_trips() -> None:
    body = {"group_id": "g", "generation_id": 3, "member_id": "m", "group_instance_id": None}
    frame = encode_request(HEARTBEAT, 4, 77, body, client_id="ćlient")
    payload = frame[4:]
    assert payload[8:10] == struct.pack(">h", len("ćlient".encode()))
    header, decoded = decode_request(payload)
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (12, 4, 77)
    assert header.client_id == "ćlient" and decoded == body
    _, null_client = decode_request(
        encode_request(HEARTBEAT, 0, 1, body | {"group_instance_id": None}, client_id=None)[4:]
    )
    assert null_client["group_id"] == "g"


def test_responses_carry_the_right_header() -> None:
    frame = encode_response(HEARTBEAT, 4, 9, {"error_code": 27})
    assert frame[4:8] == struct.pack(">i", 9) and frame[8] == 0  # v1 header: empty tag buffer
    assert decode_response(HEARTBEAT, 4, frame[4:]) == (9, {"throttle_time_ms": 0, "error_code": 27})
    api = encode_response(API_VERSIONS, 3, 5, {"error_code": 0, "api_keys": []})
    assert decode_response(API_VERSIONS, 3, api[4:])[0] == 5
    assert struct.unpack(">i", api[:4])[0] == len(api) - 4


def test_unknown_api_keys_and_versions_raise_unsupported_version_with_the_correlation_id() -> None:
    with pytest.raises(UnsupportedVersion) as raised:
        decode_request(struct.pack(">hhih", 12, 99, 1234, -1))
    assert (raised.value.api_key, raised.value.api_version, raised.value.correlation_id) == (12, 99, 1234)
    with pytest.raises(UnsupportedVersion):
        decode_request(struct.pack(">hhih", 9999, 0, 1, -1))


def test_a_truncated_header_or_body_is_a_decode_error() -> None:
    frame = encode_request(JOIN_GROUP, 5, 1, {"group_id": "g", "protocol_type": "consumer"})[4:]
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode_request(frame[:cut])


def test_the_splitter_checks_a_size_prefix_split_across_chunks_and_accepts_the_maximum() -> None:
    splitter = FrameSplitter(max_frame_bytes=3)
    assert splitter.feed(b"\x00\x00") == [] and splitter.feed(b"\x00\x03ab") == []
    assert splitter.feed(b"c\x00\x00\x00\x00") == [b"abc", b""]
    negative = FrameSplitter()
    for byte in b"\xff\xff\xff":
        assert negative.feed(bytes([byte])) == []
    with pytest.raises(DecodeError):
        negative.feed(b"\xfe")


def test_every_request_uses_header_v2_exactly_when_its_version_is_flexible() -> None:
    from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS

    for api_key, schema in REQUEST_SCHEMAS.items():
        for version in schema.versions or ():
            flexible = schema.is_flexible(version)
            assert request_header_version(api_key, version) == (2 if flexible else 1)
            response_flexible = RESPONSE_SCHEMAS[api_key].is_flexible(version) and api_key != API_VERSIONS
            assert response_header_version(api_key, version) == (1 if response_flexible else 0)


def test_api_versions_responses_have_no_header_tag_section_even_when_flexible() -> None:
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = encode_response(API_VERSIONS, 4, 3, body)
    # size, correlation id, then the body's INT16 error code at once: no tag byte in between.
    assert frame[4:10] == struct.pack(">ih", 3, 35)
    heartbeat = encode_response(HEARTBEAT, 4, 3, {"error_code": 35})
    assert heartbeat[4:9] == struct.pack(">i", 3) + b"\x00"


def test_bytes_after_a_whole_request_body_are_ignored_as_kafka_does() -> None:
    # librdkafka's Metadata v12 with null topics: a compact null array (one byte 0x00) followed by
    # the 3 remaining bytes of the 4-byte placeholder it reserved; Kafka parses the body and ignores them.
    body = {"topics": None, "allow_auto_topic_creation": True, "include_topic_authorized_operations": False}
    payload = encode_request(3, 12, 9, body, client_id="rdkafka")[4:]
    header, decoded = decode_request(payload + b"\x00\x00\x00")
    assert header.correlation_id == 9 and decoded["topics"] is None
    assert decoded["allow_auto_topic_creation"] is True
