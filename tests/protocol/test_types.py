"""Primitives, unsigned varints, implicit defaults and the error-code table."""

from __future__ import annotations

import uuid

import pytest

from kcoord.protocol import types as t
from kcoord.protocol.errors import DecodeError, ErrorCode, FrameTooLarge, UnsupportedVersion
from kcoord.protocol.schema import Field, Schema, array


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16383, b"\xff\x7f"),
        (16384, b"\x80\x80\x01"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varints_are_leb128(value: int, encoded: bytes) -> None:
    assert t.encode_uvarint(value) == encoded
    assert t.decode_uvarint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


@pytest.mark.parametrize("value", [-1, 2**32])
def test_unsigned_varints_outside_32_bits_cannot_be_encoded(value: int) -> None:
    with pytest.raises(ValueError):
        t.encode_uvarint(value)


def test_a_varint_longer_than_five_bytes_is_malformed_and_a_truncated_one_is_short() -> None:
    with pytest.raises(ValueError, match="longer than 5 bytes"):
        t.decode_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(IndexError):  # the codecs map this to DecodeError("truncated")
        t.decode_uvarint(b"\x80\x80", 0)


NESTED = Schema("Nested", fields=(Field("a", t.INT8), Field("b", t.NULLABLE_STRING)))


@pytest.mark.parametrize(
    ("kind", "default"),
    [
        (t.BOOLEAN, False),
        (t.INT8, 0),
        (t.INT16, 0),
        (t.INT32, 0),
        (t.INT64, 0),
        (t.UINT16, 0),
        (t.FLOAT64, 0.0),
        (t.UUID, uuid.UUID(int=0)),
        (t.STRING, ""),
        (t.NULLABLE_STRING, None),
        (t.BYTES, b""),
        (t.NULLABLE_BYTES, None),
        (t.RECORDS, None),
        (array(t.INT32), []),
        (array(NESTED), []),
        (NESTED, {"a": 0, "b": None}),
    ],
)
def test_implicit_defaults_are_kafkas(kind: object, default: object) -> None:
    assert Field("f", kind).default == default


def test_explicit_defaults_win_and_duplicate_field_names_are_rejected() -> None:
    assert Field("f", t.INT32, default=-1).default == -1
    with pytest.raises(ValueError, match="duplicate"):
        Schema("Dup", fields=(Field("x", t.INT8), Field("x", t.INT16)))


def test_field_presence_and_nullability_follow_the_version_ranges() -> None:
    ranged = Field("f", t.STRING, since=2, until=4, nullable_since=3)
    assert [ranged.present(v, flexible=False) for v in range(6)] == [False, False, True, True, True, False]
    assert [ranged.nullable(v) for v in (2, 3)] == [False, True]
    tagged = Field("g", t.INT32, since=1, tag=3, tagged_since=5)
    assert not tagged.present(6, flexible=False)  # tagged fields exist only in flexible versions
    assert [tagged.present(v, flexible=True) for v in (4, 5)] == [False, True]


# ERR (apache/kafka Errors.java); the retriable column is the reference's section 9.
SECTION_9 = {
    -1: False, 3: True, 5: True, 6: True, 7: True, 10: False, 12: False, 13: True, 14: True, 15: True,
    16: True, 17: False, 19: True, 20: True, 22: False, 23: False, 24: False, 25: False, 26: False,
    27: False, 28: False, 29: False, 30: False, 35: False, 36: False, 37: False, 38: False, 39: False,
    40: False, 41: True, 42: False, 56: True, 68: False, 69: False, 73: False, 74: True, 75: True,
    79: False, 81: False, 82: False, 86: False, 88: True, 89: True, 100: True, 110: False, 111: False,
    112: False, 113: False,
}  # fmt: skip


def test_error_codes_cover_every_kafka_code_with_its_retriability() -> None:
    assert [int(code) for code in ErrorCode] == list(range(-1, 134))
    assert ErrorCode(0).name == "NONE" and ErrorCode(79).name == "MEMBER_ID_REQUIRED"
    for code, retriable in SECTION_9.items():
        assert ErrorCode(code).retriable is retriable, ErrorCode(code).name
    assert ErrorCode.CONCURRENT_TRANSACTIONS.retriable and not ErrorCode.REBALANCE_IN_PROGRESS.retriable


def test_codec_exceptions_name_what_failed() -> None:
    error = DecodeError(11, 5, "protocols", "truncated")
    assert (error.api_key, error.api_version, error.field, error.reason) == (11, 5, "protocols", "truncated")
    assert "api_key=11" in str(error) and "protocols" in str(error)
    assert issubclass(FrameTooLarge, DecodeError)
    unsupported = UnsupportedVersion(18, 9, 42)
    assert (unsupported.api_key, unsupported.api_version, unsupported.correlation_id) == (18, 9, 42)
