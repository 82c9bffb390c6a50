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
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import cramjam
import crc32c

__all__ = [
    "BATCH_HEADER",
    "CRC_START",
    "LOG_OVERHEAD",
    "BatchHeader",
    "ControlRecordType",
    "EndTransactionMarker",
    "ProducedBatch",
    "Record",
    "batch_crc",
    "compress",
    "end_txn_marker_batch",
    "iter_records",
    "read_end_txn_marker",
    "read_header",
    "read_varint",
    "with_place",
    "write_batch",
    "write_varint",
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


@dataclass(frozen=True, slots=True)
class ProducedBatch:
    """One Produce partition's records with the header of their (first) batch, read once where the
    request arrives and handed on: authorization and transaction verification look at its producer and
    attributes, the partition log's validation checks it (`partition_log.validation.check_batch`), the
    append stamps it. Nothing is checked here: `header` is what the first 61 bytes say, magic 2 or not."""

    data: bytes
    header: BatchHeader | None
    """None when the records are shorter than a batch header."""

    @classmethod
    def read(cls, records: bytes | None) -> ProducedBatch:
        data = records or b""
        return cls(data, read_header(data) if len(data) >= BATCH_HEADER.size else None)

    @property
    def transactional_producer(self) -> BatchHeader | None:
        """The header when the batch is transactional (KafkaApis' `hasTransactionalRecords`), else None."""
        header = self.header
        return header if header is not None and header.is_transactional else None


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


_INT64, _INT32, _INT16, _UINT32 = (
    struct.Struct(">q"),
    struct.Struct(">i"),
    struct.Struct(">h"),
    struct.Struct(">I"),
)
# Where BATCH_HEADER's fields sit: baseOffset 0, partitionLeaderEpoch 12, crc 17, attributes 21 (CRC_START),
# maxTimestamp 35.
_LEADER_EPOCH_AT, _CRC_AT, _MAX_TIMESTAMP_AT = 12, 17, 35


def with_place(
    data: bytes, header: BatchHeader, base_offset: int, leader_epoch: int, append_time_ms: int | None
) -> bytes:
    """A whole batch (`header` its header) with its place in a partition written into it: the base offset
    and partition leader epoch (outside the CRC), and under LogAppendTime (`append_time_ms`) the
    timestamp type and max timestamp, with the CRC computed again (Kafka's DefaultRecordBatch
    `setLastOffset`, `setPartitionLeaderEpoch`, `setMaxTimestamp`)."""
    out = bytearray(data)
    _INT64.pack_into(out, 0, base_offset)
    _INT32.pack_into(out, _LEADER_EPOCH_AT, leader_epoch)
    if append_time_ms is not None:
        _INT16.pack_into(out, CRC_START, header.attributes | TIMESTAMP_TYPE_BIT)
        _INT64.pack_into(out, _MAX_TIMESTAMP_AT, append_time_ms)
        _UINT32.pack_into(out, _CRC_AT, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


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


_LZ4_FRAME_HEADER = bytes.fromhex("04224d18604082")  # magic, FLG 0x60 (v1, independent blocks), BD 64 KiB, HC
_LZ4_BLOCK = 64 * 1024
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # magic, version 1, compatible version 1
_XERIAL_BLOCK = 32 * 1024


def compress(codec: int, data: bytes, level: int) -> bytes:
    """The records section of a batch compressed as Kafka's own writers compress it (KIP-390 `level`):
    gzip (GzipCompression: zlib, -1 = zlib's default), snappy in xerial's framing (SnappyOutputStream, 32 KiB
    blocks), lz4 in Kafka's frame (Lz4BlockOutputStream: 64 KiB independent blocks, no checksums, level 9 the
    fast compressor and others the high-compression one), zstd (ZstdCompression)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        packer = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if codec == SNAPPY:
        blocks = [_XERIAL_HEADER]
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            blocks += (_INT32.pack(len(block)), block)
        return b"".join(blocks)
    if codec == LZ4:
        return _lz4_frame(data, level)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise ValueError(f"unknown compression codec {codec}")


def _lz4_frame(data: bytes, level: int) -> bytes:
    """Lz4BlockOutputStream's frame: blocks a compressed form would not shrink are stored with the
    high bit of their length set; a zero length ends the frame."""
    out = [_LZ4_FRAME_HEADER]
    for start in range(0, len(data), _LZ4_BLOCK):
        raw = data[start : start + _LZ4_BLOCK]
        if level == 9:  # CompressionType.LZ4's default level: lz4-java's fast compressor
            block = bytes(cramjam.lz4.compress_block(raw, store_size=False))
        else:
            block = bytes(
                cramjam.lz4.compress_block(raw, mode="high_compression", compression=level, store_size=False)
            )
        if len(block) >= len(raw):
            out += (struct.pack("<I", len(raw) | 0x80000000), raw)
        else:
            out += (struct.pack("<I", len(block)), block)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


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


# -- control batches: Kafka's EndTransactionMarker (COMMIT/ABORT) -------------------------------------------
class ControlRecordType(IntEnum):
    """The control record key's type (Kafka's `ControlRecordType`); only the two markers matter here."""

    ABORT = 0
    COMMIT = 1


class EndTransactionMarker(NamedTuple):
    commit: bool
    coordinator_epoch: int


_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_MARKER_VALUE = struct.Struct(">hi")  # version 0, coordinator_epoch
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


def _zigzag(value: int) -> bytes:
    """One zigzag varint or varlong (any 64-bit value: lengths, and the deltas of rebuilt records)."""
    encoded, out = (value << 1) ^ (value >> 63), bytearray()
    while encoded & ~0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


write_varint = _zigzag
"""A zigzag varint / varlong (Kafka's ByteUtils.writeVarint / writeVarlong)."""
read_varint = _varint


def write_batch(header: BatchHeader, records: bytes) -> bytes:
    """A whole batch of `header`'s fields (its batch_length and crc ignored) around a records section
    (compressed as the attributes say), with the length and CRC-32C computed (DefaultRecordBatch
    .writeHeader)."""
    fields = header._replace(batch_length=BATCH_HEADER.size - LOG_OVERHEAD + len(records), crc=0)
    data = bytearray(BATCH_HEADER.pack(*fields))
    data += records
    _UINT32.pack_into(data, _CRC_AT, crc32c.crc32c(memoryview(data)[CRC_START:]))
    return bytes(data)


def end_txn_marker_batch(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp: int
) -> bytes:
    """The control batch Kafka writes to end a transaction on a partition (`MemoryRecords.
    writeEndTransactionalMarker`): magic 2, transactional + control attributes, no compression, base
    sequence -1, one record at offset delta 0 whose key is (version 0, type) and value (version 0,
    coordinator epoch). Base offset 0: the partition log patches it when it assigns offsets."""
    key = _CONTROL_KEY.pack(0, ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    body = (
        b"\x00" + _zigzag(0) + _zigzag(0) + _zigzag(len(key)) + key + _zigzag(len(value)) + value + _zigzag(0)
    )
    record = _zigzag(len(body)) + body
    size = BATCH_HEADER.size + len(record)
    header = bytearray(
        BATCH_HEADER.pack(
            0, size - LOG_OVERHEAD, NO_PARTITION_LEADER_EPOCH, 2, 0, TRANSACTIONAL_BIT | CONTROL_BIT, 0,
            timestamp, timestamp, producer_id, producer_epoch, NO_SEQUENCE, 1,
        )
    )  # fmt: skip
    data = header + record
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[CRC_START:])))
    return bytes(data)


def read_end_txn_marker(batch: bytes) -> EndTransactionMarker | None:
    """The COMMIT/ABORT marker of a whole control batch; None for an empty control batch (its
    transaction was cleaned away) or another control type (`ProducerAppendInfo.append`)."""
    for record in iter_records(batch):
        if record.key is None or len(record.key) < _CONTROL_KEY.size:
            raise ValueError("control record key too short")
        _, kind = _CONTROL_KEY.unpack_from(record.key)
        if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        if record.value is None or len(record.value) < _MARKER_VALUE.size:
            raise ValueError("end transaction marker value too short")
        version, coordinator_epoch = _MARKER_VALUE.unpack_from(record.value)
        if version < 0:
            raise ValueError(f"invalid end transaction marker version {version}")
        return EndTransactionMarker(kind == ControlRecordType.COMMIT, coordinator_epoch)
    return None
