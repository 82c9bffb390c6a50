"""The DSL itself: both codecs derived from one schema agree, the construct one is fully compiled,
and the field rules (versions, nullability, defaults, tags) hold."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcoord.protocol import construct_codec
from kcoord.protocol import types as t
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.consumer_protocol import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from kcoord.protocol.schema import Field, Schema, array
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


def test_the_compiled_check_catches_constructs_that_run_interpreted() -> None:
    """construct compiles VarInt and Adapters 'successfully' but links them in interpreted."""
    import construct

    assert not construct_codec.is_fully_compiled(construct.Struct("n" / construct.VarInt).compile())
    assert construct_codec.is_fully_compiled(construct.Struct("n" / construct.Int32sb).compile())


def test_tagged_field_codecs_are_fully_compiled_too() -> None:
    for schema, version in (p.values for p in ALL):
        if not schema.is_flexible(version):
            continue
        for f in schema.fields:
            if f.tag is not None and f.present(version, True):
                assert construct_codec.is_fully_compiled(construct_codec._tag_codec(f, version))


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


# SAMPLE v3 by hand: name "x", count -1, items [{id 1, label "a", <item tags>}], ids [],
# since_three False, token 0, then the top-level tagged section.
def _sample_v3(item_tags: bytes, tags: bytes) -> bytes:
    head = b"\x02x" + b"\xff\xff\xff\xff" + b"\x02" + b"\x00\x00\x00\x01" + b"\x02a" + item_tags
    return head + b"\x01" + b"\x00" + bytes(16) + tags


def test_unknown_tags_are_skipped_in_every_struct_and_known_ones_read_between_them() -> None:
    item_tags = b"\x01" + b"\x09\x03abc"  # one unknown tag in the nested struct
    tags = b"\x03" + b"\x05\x02zz" + b"\x07\x08" + (42).to_bytes(8, "big") + b"\x96\x01\x00"
    for parse in (codec_for(SAMPLE, 3).parse, lambda d: construct_codec.parse(SAMPLE, 3, d)):
        decoded = parse(_sample_v3(item_tags, tags))
        assert decoded["items"] == [{"id": 1, "label": "a"}]
        assert (decoded["epoch"], decoded["note"]) == (42, None)
    assert codec_for(SAMPLE, 3).parse(_sample_v3(b"\x00", b"\x00"))["epoch"] == -1


@pytest.mark.parametrize(
    "tags",
    [
        b"\x01\x05\x09zz",  # a tagged field whose size runs past the end
        b"\xff\xff\xff\xff\x0f",  # 2^32-1 tagged fields announced, none there
        b"\x01\x07\x02\x00\x00",  # a known tag whose value is shorter than its type
        b"\x01\x80\x80\x80\x80\x80\x01\x00",  # a tag number varint longer than 5 bytes
    ],
)
def test_malformed_tagged_sections_are_decode_errors(tags: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(DecodeError) as raised:
        codec_for(SAMPLE, 3).parse(_sample_v3(b"\x00", tags))
    assert raised.value.field == "tagged fields" and time.perf_counter() - started < 0.5
    with pytest.raises(DecodeError):
        construct_codec.parse(SAMPLE, 3, _sample_v3(b"\x00", tags))


def test_building_rejects_values_the_wire_type_cannot_hold() -> None:
    for bad in ({"count": 2**31}, {"count": "7"}, {"name": 5}, {"items": [{"id": None}]}):
        with pytest.raises(ValueError):
            codec_for(SAMPLE, 3).build(bad)


def test_codecs_are_cached_and_versions_outside_the_schema_are_refused() -> None:
    assert codec_for(SAMPLE, 2) is codec_for(SAMPLE, 2)
    with pytest.raises(ValueError):
        codec_for(SAMPLE, 4)
