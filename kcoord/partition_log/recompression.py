"""A produced batch recompressed to its topic's `compression.type` (Kafka's `LogValidator`).

When Kafka rebuilds (`LogValidator.validateMessagesAndAssignOffsets` /
`validateMessagesAndAssignOffsetsCompressed`): the topic names a codec (not `producer`) and the batch's
codec differs; `uncompressed` is codec none. A control batch written uncompressed is never rebuilt
(markers do not pass through here at all: `validation.marker_append` writes them). A batch already in
the topic's codec is kept as it is, whatever level the producer used (Kafka compares the codec only).

What the rebuilt batch keeps (`LogValidator.buildRecordsAndAssignOffsets`, `MemoryRecordsBuilder`): the
producer id, epoch, base sequence and transactional flag, the partition leader epoch, every record's
key, value, headers and timestamp in order. What it changes: the records are renumbered 0..n-1 (offset
deltas), their attributes are 0, the base timestamp is the first record's and the max timestamp the
largest record timestamp, the timestamp type is CreateTime (the partition log's `stamp` sets
LogAppendTime and the broker's time afterwards, as the builder does for such a topic), and the codec
is the topic's at the topic's KIP-390 level.

Each record is split once: its length, attributes, timestamp delta and offset delta are read, the rest
(key, value, headers) is copied as bytes. When nothing in those prefixes changes, which is what stock
producers write, the decompressed records section is reused whole.
"""

from __future__ import annotations

import struct
import zlib

import cramjam

from kcoord.partition_log.config import PartitionConfig
from kcoord.protocol.record_batch import (
    BATCH_HEADER,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    TRANSACTIONAL_BIT,
    ZSTD,
    BatchHeader,
    compress,
    decompress,
    read_header,
    read_varint,
    write_batch,
    write_varint,
)

__all__ = ["TOPIC_CODECS", "recompressed", "target_codec"]

# BrokerCompressionType's names (producer: none of them, the batch keeps the producer's codec)
TOPIC_CODECS = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def target_codec(config: PartitionConfig) -> int | None:
    """The codec the topic stores batches in; None when it keeps the producer's (`producer`)."""
    return TOPIC_CODECS.get(config.compression_type)


def _level(config: PartitionConfig, codec: int) -> int:
    if codec == GZIP:
        return config.compression_gzip_level
    if codec == LZ4:
        return config.compression_lz4_level
    if codec == ZSTD:
        return config.compression_zstd_level
    return 0  # snappy and none have no level


def recompressed(
    data: bytes, header: BatchHeader, config: PartitionConfig
) -> tuple[bytes, BatchHeader] | str | None:
    """The batch rebuilt in the topic's codec; None when Kafka keeps it as it is; a string says why its
    records are malformed (INVALID_RECORD)."""
    target = target_codec(config)
    if target is None or target == header.compression or header.is_control:
        return None
    try:
        body = decompress(header.compression, data[BATCH_HEADER.size : header.size])
    except (ValueError, zlib.error, cramjam.DecompressionError, struct.error) as exc:
        return f"Failed to decompress the record batch: {exc}"
    records = _rebuilt_records(body, header)
    if isinstance(records, str):
        return records
    section, base_timestamp, max_timestamp = records
    rebuilt = header._replace(
        attributes=target | (header.attributes & TRANSACTIONAL_BIT),
        last_offset_delta=header.records_count - 1,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
    )
    batch = write_batch(rebuilt, compress(target, section, _level(config, target)))
    return batch, read_header(batch)


def _rebuilt_records(body: bytes, header: BatchHeader) -> tuple[bytes, int, int] | str:
    """(records section, base timestamp, max timestamp) as MemoryRecordsBuilder writes the records again."""
    split = _split(body, header)
    if isinstance(split, str):
        return split
    records, unchanged = split
    base = records[0][0]
    max_timestamp = max(timestamp for timestamp, _ in records)
    if unchanged and base == header.base_timestamp:
        return body, base, max_timestamp
    out: list[bytes] = []
    for index, (timestamp, rest) in enumerate(records):
        record = b"\x00" + write_varint(timestamp - base) + write_varint(index) + rest
        out += (write_varint(len(record)), record)
    return b"".join(out), base, max_timestamp


def _split(body: bytes, header: BatchHeader) -> tuple[list[tuple[int, bytes]], bool] | str:
    """Every record as (timestamp, its bytes after the offset delta), and whether every record already
    has attributes 0 and offset delta = its index; or why the records are malformed."""
    records: list[tuple[int, bytes]] = []
    unchanged, pos = not header.log_append_time, 0
    try:
        for index in range(header.records_count):
            length, pos = read_varint(body, pos)
            end = pos + length
            if length < 3 or end > len(body):
                return f"Invalid record size {length} at record {index} of the batch"
            attributes = body[pos]
            delta, pos = read_varint(body, pos + 1)
            offset_delta, pos = read_varint(body, pos)
            problem = _fields_problem(body, pos, end)
            if problem is not None:
                return problem
            unchanged = unchanged and attributes == 0 and offset_delta == index
            # DefaultRecord.readFrom: a LogAppendTime batch's records all carry its max timestamp
            timestamp = header.max_timestamp if header.log_append_time else header.base_timestamp + delta
            records.append((timestamp, body[pos:end]))
            pos = end
    except (IndexError, ValueError):
        return "Found invalid record structure in the record batch"
    if pos != len(body):
        return "Incorrect declared batch size, records still remaining after the last record"
    return records, unchanged


def _fields_problem(body: bytes, pos: int, end: int) -> str | None:
    """Whether a record's key, value and headers fill its declared size exactly (DefaultRecord.readFrom's
    checks: a rebuilt batch gets a new CRC, so nothing malformed may pass into it)."""
    for _ in range(2):  # key, value: -1 = null
        size, pos = read_varint(body, pos)
        pos += max(size, 0)
    count, pos = read_varint(body, pos)
    if count < 0:
        return f"Found invalid number of record headers {count}"
    for _ in range(count):
        size, pos = read_varint(body, pos)
        if size < 0:
            return "Invalid negative header key size " + str(size)
        value_size, pos = read_varint(body, pos + size)
        pos += max(value_size, 0)
        if pos > end:
            break
    if pos != end:
        return f"Invalid record size: the record's fields end at {pos - end:+d} bytes from its declared size"
    return None
