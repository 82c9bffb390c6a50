"""Wire primitives: the logical types a schema field can have.

Each primitive is one distinct object (schemas and tests compare them by identity). Its encoding
depends on whether the message version is flexible (KIP-482): strings, bytes and arrays switch to
their compact form (unsigned-varint length + 1, 0 = null). `protocol.codegen` turns these into
straight-line `struct` code; `protocol.construct_codec` into compiled construct classes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Primitive:
    """A scalar wire type. `fmt` is its struct format when it has a fixed size."""

    name: str
    fmt: str | None
    nullable: bool = False

    def __repr__(self) -> str:
        return self.name


BOOLEAN = Primitive("BOOLEAN", "?")
INT8 = Primitive("INT8", "b")
INT16 = Primitive("INT16", "h")
INT32 = Primitive("INT32", "i")
INT64 = Primitive("INT64", "q")
UINT16 = Primitive("UINT16", "H")
FLOAT64 = Primitive("FLOAT64", "d")
UUID = Primitive("UUID", None)
STRING = Primitive("STRING", None)
NULLABLE_STRING = Primitive("NULLABLE_STRING", None, nullable=True)
BYTES = Primitive("BYTES", None)
NULLABLE_BYTES = Primitive("NULLABLE_BYTES", None, nullable=True)
# RECORDS: record batches carried as nullable bytes; the data plane parses them, not the codec.
RECORDS = Primitive("RECORDS", None, nullable=True)

FIXED_SIZE = {BOOLEAN, INT8, INT16, INT32, INT64, UINT16, FLOAT64}
TEXT = {STRING, NULLABLE_STRING}
BINARY = {BYTES, NULLABLE_BYTES, RECORDS}

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, eq=False)
class Array:
    """ARRAY[item] / COMPACT_ARRAY[item]; item is a Primitive or a nested Schema."""

    item: Any


def implicit_default(kind: Any) -> Any:
    """Kafka's default for a field that names none: zero, false, empty, or null when nullable."""
    if isinstance(kind, Array):
        return []
    if isinstance(kind, Primitive):
        if kind.nullable:
            return None
        if kind is UUID:
            return ZERO_UUID
        if kind is FLOAT64:
            return 0.0
        if kind is BOOLEAN:
            return False
        if kind in TEXT:
            return ""
        if kind in BINARY:
            return b""
        return 0
    return None  # a nested struct field without a default is absent (null)


# Unsigned varint (LEB128) helpers shared by both codec generators. Kafka caps a 32-bit
# unsigned varint at 5 bytes; a longer one is malformed, never a huge number.
_SMALL_UVARINTS = [bytes([i]) for i in range(128)]


def encode_uvarint(value: int) -> bytes:
    if 0 <= value < 128:
        return _SMALL_UVARINTS[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position); IndexError when truncated, ValueError when longer than 5 bytes."""
    result = 0
    shift = 0
    for _ in range(5):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise ValueError("unsigned varint longer than 5 bytes")
