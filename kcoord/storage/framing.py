"""Record framing: one struct header, CRC32C over everything after the crc field.

    u32 length | u32 crc32c | u8 type | u8 flags | u64 lsn | i64 timestamp_ms | u16 key_len | key | value

`length` counts the bytes after the crc field. Types 0-0x7F belong to the log's user; storage's own
types are >= 0x80. The replay loop reads with precompiled `struct.Struct`s (construct per record is
5-20x slower); `FRAME_SCHEMA` is the same layout in construct, checked against the fast reader by a
property test.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import construct
from crc32c import crc32c

HEADER = struct.Struct(">IIBBQqH")
HEADER_SIZE = HEADER.size  # 28
AFTER_CRC = struct.Struct(">BBQqH")
PREFIX = struct.Struct(">II")
FIXED_AFTER_CRC = AFTER_CRC.size  # 20

# Where each header field sits from the start of a record, for readers that gather one field of
# many records at once (the pipeline's column-wise reader); derived from HEADER's format.
LENGTH_AT, CRC_AT, TYPE_AT, FLAGS_AT, LSN_AT, TIMESTAMP_AT, KEY_LEN_AT = (
    struct.calcsize(HEADER.format[:i]) for i in range(1, 8)
)

FLAG_TOMBSTONE = 0x01
FLAG_BATCH_START = 0x02
TYPE_BATCH_END = 0x80
USER_TYPE_MAX = 0x7F

DEFAULT_MAX_RECORD_BYTES = 16 << 20

FRAME_SCHEMA = construct.Struct(
    "length" / construct.Int32ub,
    "crc" / construct.Int32ub,
    "type" / construct.Int8ub,
    "flags" / construct.Int8ub,
    "lsn" / construct.Int64ub,
    "timestamp_ms" / construct.Int64sb,
    "key_len" / construct.Int16ub,
    "key" / construct.Bytes(construct.this.key_len),
    "value" / construct.Bytes(construct.this.length - FIXED_AFTER_CRC - construct.this.key_len),
)


@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded record as stored: position `offset` in its file, `size` bytes long."""

    type: int
    flags: int
    lsn: int
    timestamp_ms: int
    key: bytes
    value: bytes | None
    offset: int
    size: int


def encode(type_: int, flags: int, lsn: int, timestamp_ms: int, key: bytes, value: bytes | None) -> bytes:
    if value is None:
        flags |= FLAG_TOMBSTONE
        value = b""
    body = AFTER_CRC.pack(type_, flags, lsn, timestamp_ms, len(key)) + key + value
    return PREFIX.pack(len(body), crc32c(body)) + body


def walk(data: bytes | memoryview, start: int, max_record_bytes: int) -> Iterator[tuple[int, ...]]:
    """`(offset, size, type, flags, lsn, timestamp_ms, key_len)` of each valid record from `start`.

    CRC-checked, copying nothing: compaction keeps most records byte for byte. Stops silently at
    the first invalid record; the caller compares the last record's end with len(data) to tell a
    clean end from a torn or corrupt tail.
    """
    view = memoryview(data)
    end = len(view)
    pos = start
    unpack_prefix = PREFIX.unpack_from
    unpack_rest = AFTER_CRC.unpack_from
    while end - pos >= HEADER_SIZE:
        length, crc = unpack_prefix(view, pos)
        if length < FIXED_AFTER_CRC or length > max_record_bytes or pos + 8 + length > end:
            return
        if crc32c(view[pos + 8 : pos + 8 + length]) != crc:
            return
        type_, flags, lsn, timestamp_ms, key_len = unpack_rest(view, pos + 8)
        if FIXED_AFTER_CRC + key_len > length:
            return
        yield pos, 8 + length, type_, flags, lsn, timestamp_ms, key_len
        pos += 8 + length


def scan(data: bytes | memoryview, start: int, max_record_bytes: int) -> Iterator[Frame]:
    """The records from `start` as `Frame`s, with `walk`'s stopping rule."""
    view = memoryview(data)
    for offset, size, type_, flags, lsn, timestamp_ms, key_len in walk(view, start, max_record_bytes):
        key_end = offset + HEADER_SIZE + key_len
        key = bytes(view[offset + HEADER_SIZE : key_end])
        value = None if flags & FLAG_TOMBSTONE else bytes(view[key_end : offset + size])
        yield Frame(type_, flags, lsn, timestamp_ms, key, value, offset, size)


def fields_at(data: bytes, offset: int) -> tuple[int, int, int, bytes, bytes | None]:
    """`(type, lsn, timestamp_ms, key, value)` of the record at `offset`, already found valid
    (by `walk` or recovery.committed_offsets)."""
    length, _, type_, flags, lsn, timestamp_ms, key_len = HEADER.unpack_from(data, offset)
    key_end = offset + HEADER_SIZE + key_len
    value = None if flags & FLAG_TOMBSTONE else data[key_end : offset + 8 + length]
    return type_, lsn, timestamp_ms, data[offset + HEADER_SIZE : key_end], value


def clear_flags(frame: bytes | memoryview, mask: int) -> bytes:
    """A copy of an encoded record with the `mask` bits of its flags cleared and its CRC redone."""
    body = bytearray(frame[8:])
    body[1] &= ~mask & 0xFF  # flags follow the type byte
    return PREFIX.pack(len(body), crc32c(body)) + body
