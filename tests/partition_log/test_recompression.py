"""A topic's compression.type on append (Kafka's LogValidator): a batch in another codec is rebuilt in
the topic's, every record and the producer fields kept; a batch already in it, a `producer` topic and a
control batch are written as they came. Batches come from kafka-python's builder (an independent
writer) and the rebuilt ones are read back by kafka-python's reader (an independent reader of every
codec: python-snappy's xerial framing, lz4.frame, zstd, gzip)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kcoord.partition_log import (
    AppendError,
    DuplicateAppend,
    PartitionConfig,
    PartitionLogs,
    ValidatedAppend,
)
from kcoord.partition_log.producers import ProducerStates
from kcoord.partition_log.validation import check_append
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import (
    BATCH_HEADER,
    ZSTD,
    batch_crc,
    iter_records,
    read_header,
    write_batch,
)

NOW = 1_700_000_000_000
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
HEADERS = [("trace", b"t-1"), ("empty", None)]


def batch(
    codec: int,
    count: int = 20,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    timestamp: int = NOW,
    value_size: int = 40,
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, *producer, batch_size=1 << 30)
    for i in range(count):
        key = None if i % 5 == 0 else b"k%d" % (i % 3)
        value = None if i == 7 else (b"%d:" % i) + b"v" * value_size
        builder.append(i, timestamp + 3 * i, key, value, HEADERS if i % 2 else [])
    return bytes(builder.build())


def content(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    """Every record of a whole batch as kafka-python reads it (offset, timestamp, key, value, headers)."""
    records = MemoryRecords(data)
    found = []
    while (read := records.next_batch()) is not None:
        found += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in read]
    return found


def check(data: bytes, config: PartitionConfig, producers: ProducerStates | None = None) -> ValidatedAppend:
    checked = check_append(data, config, producers or ProducerStates(), NOW)
    assert isinstance(checked, ValidatedAppend), checked
    return checked


@pytest.mark.parametrize("source", sorted(CODECS))
@pytest.mark.parametrize("topic", [*sorted(CODECS), "producer"])
def test_every_codec_pair_round_trips_in_the_topics_codec(source: str, topic: str) -> None:
    data = batch(CODECS[source])
    checked = check(data, PartitionConfig(compression_type=topic))
    expected_codec = CODECS[source] if topic == "producer" else CODECS[topic]
    assert checked.header.compression == expected_codec
    if expected_codec == CODECS[source]:
        assert checked.data == data  # kept as it came (Kafka's in-place assignment)
    assert checked.header == read_header(checked.data)
    assert batch_crc(checked.data, 0, checked.header.size) == checked.header.crc
    assert (checked.header.records_count, checked.header.last_offset_delta) == (20, 19)
    assert (checked.header.base_timestamp, checked.header.max_timestamp) == (NOW, NOW + 57)
    assert content(checked.data) == content(data)
    assert [r.value for r in iter_records(checked.data)] == [r[3] for r in content(data)]


@pytest.mark.parametrize(
    ("topic", "levels"),
    [
        ("gzip", {"compression_gzip_level": 1}),
        ("gzip", {"compression_gzip_level": 9}),
        ("lz4", {"compression_lz4_level": 1}),
        ("lz4", {"compression_lz4_level": 17}),
        ("zstd", {"compression_zstd_level": -5}),
        ("zstd", {"compression_zstd_level": 19}),
    ],
)
def test_levels_write_batches_every_reader_reads(topic: str, levels: dict[str, int]) -> None:
    data = batch(0, count=300, value_size=2000)  # several LZ4 (64 KiB) and snappy (32 KiB) blocks
    checked = check(data, PartitionConfig(compression_type=topic, **levels))  # type: ignore[arg-type]
    assert checked.header.compression == CODECS[topic]
    assert checked.header.size < len(data) // 4
    assert content(checked.data) == content(data)


def test_levels_change_the_bytes_written() -> None:
    data = batch(0, count=300, value_size=2000)
    fast = check(data, PartitionConfig(compression_type="zstd", compression_zstd_level=-50)).data
    small = check(data, PartitionConfig(compression_type="zstd", compression_zstd_level=19)).data
    assert len(small) < len(fast)


def test_idempotent_and_transactional_batches_keep_their_producer_fields() -> None:
    for transactional in (False, True):
        data = batch(2, producer=(4242, 3, 17), transactional=transactional)
        header = check(data, PartitionConfig(compression_type="zstd")).header
        assert header.compression == ZSTD
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4242, 3, 17)
        assert header.is_transactional is transactional
        assert not header.log_append_time


def test_sequences_continue_and_a_retry_is_a_duplicate_after_recompression(tmp_path: Path) -> None:
    config = PartitionConfig(compression_type="lz4")

    async def run() -> None:
        logs = await PartitionLogs.open(tmp_path, fsync="always", now_ms=lambda: NOW)
        plog = logs.ensure("t", 0, config)
        first = batch(0, count=5, producer=(7, 0, 0))
        for data, base in ((first, 0), (batch(4, count=5, producer=(7, 0, 5)), 5)):
            checked = plog.validate(data, NOW)
            assert isinstance(checked, ValidatedAppend)
            assert (await plog.append(checked, NOW)).base_offset == base
        assert plog.validate(first, NOW) == DuplicateAppend(0)
        skipped = plog.validate(batch(0, count=5, producer=(7, 0, 20)), NOW)
        assert (
            isinstance(skipped, AppendError) and skipped.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        read = plog.read(0, 1 << 20)
        assert read is not None
        offsets = [r[0] for r in content(read.records)]
        assert offsets == list(range(10))
        headers = [read_header(read.records, 0)]
        headers.append(read_header(read.records, headers[0].size))
        assert [h.compression for h in headers] == [3, 3]
        assert [(h.base_offset, h.base_sequence) for h in headers] == [(0, 0), (5, 5)]
        await logs.close()

    asyncio.run(run())


def test_a_control_batch_is_never_recompressed(tmp_path: Path) -> None:
    async def run() -> None:
        logs = await PartitionLogs.open(tmp_path, fsync="always", now_ms=lambda: NOW)
        plog = logs.ensure("t", 0, PartitionConfig(compression_type="zstd"))
        checked = plog.validate(batch(0, count=3, producer=(9, 0, 0), transactional=True), NOW)
        assert isinstance(checked, ValidatedAppend) and checked.header.compression == ZSTD
        await plog.append(checked, NOW)
        marker = plog.append_marker(9, 0, True, 0, NOW)
        assert not isinstance(marker, AppendError)
        await marker
        read = plog.read(0, 1 << 20)
        assert read is not None
        data = read.records[read_header(read.records).size :]
        control = read_header(data)
        assert control.is_control and control.compression == 0 and control.base_offset == 3
        await logs.close()

    asyncio.run(run())


def test_log_append_time_topics_stamp_the_rebuilt_batch(tmp_path: Path) -> None:
    config = PartitionConfig(compression_type="gzip", message_timestamp_type="LogAppendTime")

    async def run() -> None:
        logs = await PartitionLogs.open(tmp_path, fsync="always", now_ms=lambda: NOW)
        plog = logs.ensure("t", 0, config)
        checked = plog.validate(batch(0, count=4, timestamp=NOW - 5000), NOW)
        assert isinstance(checked, ValidatedAppend)
        result = await plog.append(checked, NOW + 1)
        assert result.log_append_time_ms == NOW + 1
        read = plog.read(0, 1 << 20)
        assert read is not None
        header = read_header(read.records)
        # MemoryRecordsBuilder under LOG_APPEND_TIME: base = the first record's time, max = the broker's
        assert header.log_append_time and header.compression == 1
        assert (header.base_timestamp, header.max_timestamp) == (NOW - 5000, NOW + 1)
        assert [r[1] for r in content(read.records)] == [NOW + 1] * 4
        await logs.close()

    asyncio.run(run())


def test_a_batch_that_does_not_decompress_is_an_invalid_record() -> None:
    header = read_header(batch(ZSTD, count=2))
    garbage = write_batch(header, b"not zstd at all")
    refused = check_append(garbage, PartitionConfig(compression_type="uncompressed"), ProducerStates(), NOW)
    assert isinstance(refused, AppendError) and refused.error_code == ErrorCode.INVALID_RECORD
    # the same batch on a producer topic is stored as it came: kcoord does not walk what it keeps
    assert isinstance(check_append(garbage, PartitionConfig(), ProducerStates(), NOW), ValidatedAppend)


def test_records_that_do_not_fill_the_declared_count_are_an_invalid_record() -> None:
    data = batch(0, count=3)
    header = read_header(data)
    short = write_batch(header._replace(records_count=4, last_offset_delta=3), data[BATCH_HEADER.size :])
    refused = check_append(short, PartitionConfig(compression_type="gzip"), ProducerStates(), NOW)
    assert isinstance(refused, AppendError) and refused.error_code == ErrorCode.INVALID_RECORD


def test_a_batch_too_large_once_decompressed_is_refused_as_kafka_does() -> None:
    data = batch(ZSTD, count=200, value_size=1000)
    assert len(data) < 10_000
    config = PartitionConfig(compression_type="uncompressed", max_message_bytes=50_000)
    refused = check_append(data, config, ProducerStates(), NOW)
    assert isinstance(refused, AppendError) and refused.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "exceeds the maximum configured size of 50000" in refused.message


def test_a_record_whose_fields_overrun_its_size_is_an_invalid_record() -> None:
    data = bytearray(batch(0, count=3))
    key_length = BATCH_HEADER.size + 4  # length, attributes, timestamp delta, offset delta, then the key's
    assert data[key_length] == 0x01  # the first record's key is null (-1)
    data[key_length] = 0x7E  # a 63-byte key: the fields no longer end where the record does
    corrupt = write_batch(read_header(bytes(data)), bytes(data[BATCH_HEADER.size :]))
    refused = check_append(corrupt, PartitionConfig(compression_type="zstd"), ProducerStates(), NOW)
    assert isinstance(refused, AppendError) and refused.error_code == ErrorCode.INVALID_RECORD
