"""Kafka's RecordBatch (magic 2): the batch header, its CRC, and the records inside.

Layout (Kafka's `DefaultRecordBatch`): baseOffset INT64, batchLength INT32 (bytes after this field),
partitionLeaderEpoch INT32, magic INT8, crc UINT32 (CRC-32C of attributes..end), attributes INT16,
lastOffsetDelta INT32, baseTimestamp INT64, maxTimestamp INT64, producerId INT64, producerEpoch INT16,
baseSequence INT32, recordsCount INT32, then the records (compressed as a whole when the batch is).
A record (`DefaultRecord`): varint length, attributes INT8, varlong timestampDelta, varint offsetDelta,
varint key length + key, varint value length + value, varint header count, headers.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

import cramjam
import crc32c

__all__ = [
    "BATCH_HEADER",
    "CRC_START",
    "LOG_OVERHEAD",
    "BatchHeader",
    "Record",
    "batch_crc",
    "iter_records",
    "read_header",
]

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part of the header outside batchLength
CRC_START = 21  # the CRC covers attributes..end
MAGIC_OFFSET = 16
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch on the wire and on disk."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def read_header(buf: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """The header of the batch at `pos` (struct.error if fewer than 61 bytes are left)."""
    return BatchHeader(*BATCH_HEADER.unpack_from(buf, pos))


def framing_problem(
    header: BatchHeader | None, position: int, length: int, expected_offset: int
) -> str | None:
    """Why the bytes at `position` of a `length`-byte segment are not a whole magic-2 batch starting
    at `expected_offset` (None: they are; the CRC is the caller's next check). `header` is None when
    fewer than a header's bytes are left. The one framing rule of partition-log recovery, `kcoord
    storage verify` and the pipeline's reader."""
    if header is None or length - position < BATCH_HEADER.size:
        return "incomplete batch header"
    if header.magic != 2 or header.batch_length < BATCH_HEADER.size - LOG_OVERHEAD:
        return f"not a magic-2 batch (magic {header.magic}, length {header.batch_length})"
    if position + header.size > length:
        return "incomplete batch"
    if header.base_offset != expected_offset:
        return f"batch at offset {header.base_offset}, expected {expected_offset}"
    return None


def batch_crc(buf: bytes | memoryview, pos: int, size: int) -> int:
    """The CRC-32C a batch of `size` bytes at `pos` should carry."""
    return crc32c.crc32c(memoryview(buf)[pos + CRC_START : pos + size])


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's ByteUtils.readVarint/readVarlong); (value, next position)."""
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise ValueError("record field runs past the batch")
    return buf[pos : pos + length], pos + length


def _xerial(data: bytes) -> bytes:
    """Java's snappy framing (xerial SnappyOutputStream): a 16-byte header, then length-prefixed blocks."""
    out, pos = [], 16
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    return b"".join(out)


def decompress(codec: int, data: bytes) -> bytes:
    """The records section of a compressed batch, as Kafka's CompressionType decoders read it."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return zlib.decompress(data, 16 + zlib.MAX_WBITS)
    if codec == SNAPPY:
        return _xerial(data) if data.startswith(_XERIAL_MAGIC) else bytes(cramjam.snappy.decompress_raw(data))
    if codec == LZ4:
        return bytes(cramjam.lz4.decompress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec}")


def iter_records(batch: bytes) -> Iterator[Record]:
    """Every record of one whole batch (decompressed); ValueError for a malformed one."""
    header = read_header(batch)
    body = decompress(header.compression, batch[BATCH_HEADER.size : header.size])
    pos = 0
    for _ in range(header.records_count):
        length, pos = _varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise ValueError("record length runs past the batch")
        pos += 1  # attributes
        timestamp_delta, pos = _varint(body, pos)
        offset_delta, pos = _varint(body, pos)
        key, pos = _bytes(body, pos)
        value, pos = _bytes(body, pos)
        count, pos = _varint(body, pos)
        headers = []
        for _ in range(count):
            name, pos = _bytes(body, pos)
            data, pos = _bytes(body, pos)
            headers.append(((name or b"").decode(), data))
        timestamp = (
            header.max_timestamp if header.log_append_time else header.base_timestamp + timestamp_delta
        )
        yield Record(header.base_offset + offset_delta, timestamp, key, value, headers)
        pos = end
