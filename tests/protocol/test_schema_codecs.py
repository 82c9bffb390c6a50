"""The DSL itself: both codecs derived from one schema agree, the construct one is fully compiled,
and the field rules (versions, nullability, defaults, tags) hold."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import construct_codec
from protocol import types as t
from protocol.consumer_protocol import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from protocol.errors import DecodeError
from protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from protocol.schema import Field, Schema, array, codec_for
from tests.protocol.test_messages_roundtrip import message_strategy

ALL = [
    pytest.param(schema, version, id=f"{schema.name}-v{version}")
    for registry in (REQUEST_SCHEMAS, RESPONSE_SCHEMAS)
    for schema in registry.values()
    for version in schema.versions
] + [
    pytest.param(schema, version, id=f"{schema.name}-v{version}")
    for schema in (CONSUMER_PROTOCOL_SUBSCRIPTION, CONSUMER_PROTOCOL_ASSIGNMENT)
    for version in range(4)
]


@pytest.mark.parametrize(("schema", "version"), ALL)
def test_every_derived_construct_codec_is_fully_compiled(schema: Schema, version: int) -> None:
    assert construct_codec.is_fully_compiled(construct_codec.construct_for(schema, version))


@pytest.mark.parametrize(("schema", "version"), ALL)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_and_construct_codecs_agree(schema: Schema, version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(schema, version))
    fast = codec_for(schema, version).build(message)
    assert construct_codec.build(schema, version, message) == fast
    assert construct_codec.parse(schema, version, fast) == codec_for(schema, version).parse(fast) == message


ITEM = Schema("Item", fields=(Field("id", t.INT32), Field("label", t.STRING, since=1)))
SAMPLE = Schema(
    "Sample",
    api_key=999,
    versions=range(0, 4),
    flexible_since=2,
    fields=(
        Field("name", t.STRING, nullable_since=1),
        Field("count", t.INT32, default=-1),
        Field("items", array(ITEM)),
        Field("ids", array(t.INT64), since=1),
        Field("since_three", t.BOOLEAN, since=3),
        Field("token", t.UUID, since=1),
        Field("note", t.NULLABLE_STRING, tag=0, tagged_since=2, default=None),
        Field("epoch", t.INT64, tag=7, tagged_since=2, default=-1),
    ),
)


def test_fields_absent_from_a_version_decode_to_their_defaults() -> None:
    decoded = codec_for(SAMPLE, 0).parse(codec_for(SAMPLE, 0).build({"name": "x", "items": [{"id": 1}]}))
    assert decoded == {
        "name": "x",
        "count": -1,
        "items": [{"id": 1, "label": ""}],
        "ids": [],
        "since_three": False,
        "token": uuid.UUID(int=0),
        "note": None,
        "epoch": -1,
    }


def test_a_non_default_value_in_a_version_that_cannot_carry_it_is_an_error() -> None:
    with pytest.raises(ValueError, match="since_three"):
        codec_for(SAMPLE, 2).build({"since_three": True})
    with pytest.raises(ValueError, match="not nullable"):
        codec_for(SAMPLE, 0).build({"name": None})
    assert codec_for(SAMPLE, 1).parse(codec_for(SAMPLE, 1).build({"name": None}))["name"] is None


def test_tagged_fields_are_written_only_when_not_default_and_read_by_name() -> None:
    codec = codec_for(SAMPLE, 3)
    plain = codec.build({})
    tagged = codec.build({"note": "ünïcode", "epoch": 42})
    assert len(tagged) > len(plain) and plain.endswith(b"\x00")
    assert codec.parse(tagged)["note"] == "ünïcode" and codec.parse(tagged)["epoch"] == 42
    with pytest.raises(ValueError):
        codec_for(SAMPLE, 1).build({"epoch": 42})  # tagged fields exist only in flexible versions


def test_compact_and_legacy_encodings_follow_the_flexible_version() -> None:
    assert codec_for(SAMPLE, 1).build({"name": "ab"})[:4] == b"\x00\x02ab"
    assert codec_for(SAMPLE, 2).build({"name": "ab"})[:3] == b"\x03ab"
    assert codec_for(SAMPLE, 2).build({"name": None})[:1] == b"\x00"


@pytest.mark.parametrize("version", range(4))
def test_truncation_at_every_byte_and_bad_bytes_raise_only_decode_error(version: int) -> None:
    message = {"name": "nämé", "items": [{"id": 1}, {"id": 2}], "note": None}
    if version >= 1:
        message |= {"ids": [1, 2, 3], "token": uuid.uuid4()}
    data = codec_for(SAMPLE, version).build(message)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as raised:
            codec_for(SAMPLE, version).parse(data[:cut])
        assert raised.value.api_key == 999 and raised.value.api_version == version


def test_huge_array_counts_fail_fast_without_allocating() -> None:
    legacy = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x7f\xff\xff\xff"  # name "", count 1, items 2^31-1
    compact = b"\x01" + b"\x00\x00\x00\x01" + b"\xff\xff\xff\xff\x0f"  # compact items count 2^32-2
    started = time.perf_counter()
    for version, data in ((0, legacy), (2, compact)):
        with pytest.raises(DecodeError, match=r"items|array"):
            codec_for(SAMPLE, version).parse(data)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x02\xff\xfe", "utf-8"),  # invalid UTF-8 in a legacy string
        (b"\x80\x80\x80\x80\x80\x01", "varint"),  # unsigned varint longer than 5 bytes
        (b"\xff\xfe", "negative"),  # length -2
    ],
)
def test_invalid_text_varints_and_lengths_are_decode_errors(data: bytes, reason: str) -> None:
    version = 2 if reason == "varint" else 0
    with pytest.raises(DecodeError):
        codec_for(SAMPLE, version).parse(data)


def test_the_construct_codec_also_rejects_malformed_input_with_decode_error() -> None:
    data = codec_for(SAMPLE, 3).build({"name": "x", "ids": [5]})
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            construct_codec.parse(SAMPLE, 3, data[:cut])
