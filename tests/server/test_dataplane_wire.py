"""Produce, Fetch, ListOffsets, DeleteRecords and InitProducerId on the wire (raw sockets, real server).

Record batches are built by kafka-python's own `DefaultRecordBatchBuilder`, an independent encoder, so
these tests also hold kcoord to what a client really sends. Bad batches are that builder's output,
mangled the way a broken client or a bad network would.
"""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

PRODUCE_V, FETCH_V, LIST_OFFSETS_V = 9, 12, 7
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_LAST_OFFSET_DELTA = struct.Struct(">i")


def batch(
    count: int, codec: int = 0, first: int = 0, timestamp: int = 1_700_000_000_000, size: int = 10
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, batch_size=1 << 30)
    for i in range(count):
        key = f"k{(first + i) % 7}".encode()
        builder.append(i, timestamp + i, key, (b"%d:" % (first + i)) + b"x" * size, [])
    return bytes(builder.build())


def with_crc(data: bytearray) -> bytes:
    """Recompute the CRC-32C over attributes..end, as a client that lies consistently would."""
    data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def produce(
    sock: socket.socket, topic: str, partition: int, records: bytes, acks: int = -1
) -> dict[str, Any]:
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }
    return call(sock, 0, PRODUCE_V, body)["responses"][0]["partition_responses"][0]  # type: ignore[no-any-return]


def fetch(
    sock: socket.socket, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20
) -> dict[str, Any]:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    response = call(sock, 1, FETCH_V, body)
    assert response["error_code"] == ErrorCode.NONE
    return response["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def list_offset(sock: socket.socket, topic: str, partition: int, timestamp: int) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}],
    }
    return call(sock, 2, LIST_OFFSETS_V, body)["topics"][0]["partitions"][0]  # type: ignore[no-any-return]


@pytest.fixture
def conn(server: KcoordServer) -> socket.socket:
    sock = connect(server.address)
    assert create_topic(sock, "t", 2)["error_code"] == ErrorCode.NONE
    return sock


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_batches_of_every_codec_come_back_byte_identical(conn: socket.socket, codec: str) -> None:
    sent = [batch(20, CODECS[codec], first=0), batch(5, CODECS[codec], first=20)]
    assert produce(conn, "t", 0, sent[0])["base_offset"] == 0
    assert produce(conn, "t", 0, sent[1])["base_offset"] == 20
    got = fetch(conn, "t", 0, 0)
    assert got["error_code"] == ErrorCode.NONE and got["high_watermark"] == 25
    stored = got["records"]
    assert len(stored) == sum(map(len, sent))
    first, second = stored[: len(sent[0])], stored[len(sent[0]) :]
    # Only the base offset (bytes 0-8) is the broker's; everything the CRC covers is the client's.
    assert first[8:12] == sent[0][8:12] and first[16:] == sent[0][16:]
    assert struct.unpack(">q", second[:8])[0] == 20 and second[16:] == sent[1][16:]


def test_latest_earliest_and_timestamps(conn: socket.socket) -> None:
    produce(conn, "t", 1, batch(10, timestamp=1000))  # offsets 0-9, timestamps 1000-1009
    produce(conn, "t", 1, batch(10, timestamp=2000))  # offsets 10-19, timestamps 2000-2009
    assert list_offset(conn, "t", 1, -1)["offset"] == 20  # after the last record, not a batch count
    assert list_offset(conn, "t", 1, -2)["offset"] == 0
    assert (list_offset(conn, "t", 1, 1005)["offset"], list_offset(conn, "t", 1, 1005)["timestamp"]) == (
        5,
        1005,
    )
    assert list_offset(conn, "t", 1, 1500)["offset"] == 10  # the first record at or after the target
    assert list_offset(conn, "t", 1, 5000)["offset"] == -1
    newest = list_offset(conn, "t", 1, -3)
    assert (newest["offset"], newest["timestamp"]) == (19, 2009)


def test_fetch_out_of_range_and_at_the_end(conn: socket.socket) -> None:
    produce(conn, "t", 0, batch(3))
    assert fetch(conn, "t", 0, 3)["records"] == b""
    assert fetch(conn, "t", 0, 4)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_fetch_returns_one_whole_batch_past_the_limits(conn: socket.socket) -> None:
    big = batch(10, size=2000)
    produce(conn, "t", 0, big)
    produce(conn, "t", 0, batch(1, first=10))
    got = fetch(conn, "t", 0, 0, max_bytes=100)
    assert len(got["records"]) == len(big)  # KIP-74: at least one whole batch, and only that one


def _mangled(kind: str) -> tuple[bytes, ErrorCode]:
    good = bytearray(batch(5))
    if kind == "crc":
        good[-1] ^= 0xFF
        return bytes(good), ErrorCode.CORRUPT_MESSAGE
    if kind == "count":
        good[23:27] = _LAST_OFFSET_DELTA.pack(9)  # claims 10 records, holds 5
        return with_crc(good), ErrorCode.INVALID_RECORD
    if kind == "truncated":
        return bytes(good[:-7]), ErrorCode.INVALID_RECORD
    if kind == "magic1":
        legacy = LegacyRecordBatchBuilder(1, 0, batch_size=1 << 20)
        legacy.append(0, 1_700_000_000_000, b"k", b"v")
        return bytes(legacy.build()), ErrorCode.INVALID_RECORD
    assert kind == "oversized"
    return batch(1, size=1_100_000), ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("kind", ["crc", "count", "truncated", "magic1", "oversized"])
def test_bad_batches_get_kafkas_error_and_lose_nothing(conn: socket.socket, kind: str) -> None:
    assert produce(conn, "t", 0, batch(2))["base_offset"] == 0
    bad, expected = _mangled(kind)
    answer = produce(conn, "t", 0, bad)
    assert answer["error_code"] == expected, ErrorCode(answer["error_code"]).name
    assert produce(conn, "t", 0, batch(3, first=2))["base_offset"] == 2  # same connection, still healthy
    got = fetch(conn, "t", 0, 0)
    assert got["high_watermark"] == 5


def test_unknown_partition_and_bad_acks(conn: socket.socket) -> None:
    assert produce(conn, "t", 7, batch(1))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(conn, "nope", 0, batch(1))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(conn, "t", 0, batch(1), acks=2)["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS


def test_init_producer_id_and_transactional_ids(conn: socket.socket) -> None:
    first = call(conn, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    second = call(conn, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert first["error_code"] == second["error_code"] == ErrorCode.NONE
    assert second["producer_id"] == first["producer_id"] + 1 and first["producer_epoch"] == 0
    transactional = call(conn, 22, 4, {"transactional_id": "tx", "transaction_timeout_ms": 60000})
    assert transactional["error_code"] == ErrorCode.NONE and transactional["producer_epoch"] == 0
    assert transactional["producer_id"] not in (first["producer_id"], second["producer_id"])


def test_producer_ids_are_never_reused_after_a_restart(server: KcoordServer, conn: socket.socket) -> None:
    before = call(conn, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})["producer_id"]
    conn.close()
    server.kill()
    server.start()
    with connect(server.address) as sock:
        after = call(sock, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})["producer_id"]
    assert after > before


def test_records_survive_a_restart(server: KcoordServer, conn: socket.socket) -> None:
    produce(conn, "t", 0, batch(4))
    conn.close()
    server.restart()
    with connect(server.address) as sock:
        got = fetch(sock, "t", 0, 0)
        assert got["high_watermark"] == 4
        assert produce(sock, "t", 0, batch(1, first=4))["base_offset"] == 4


@pytest.mark.parametrize("version", [13, 15, 16, 17])
def test_fetch_by_topic_id_agrees_with_metadata(conn: socket.socket, version: int) -> None:
    sent = batch(4)
    produce(conn, "t", 1, sent)
    metadata = call(conn, 3, 12, {"topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}]})
    topic_id = metadata["topics"][0]["topic_id"]
    assert topic_id != uuid.UUID(int=0)
    partitions = [{"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in (1, 0, 7)]
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "topics": [
            {"topic_id": topic_id, "partitions": partitions},
            {"topic_id": uuid.uuid4(), "partitions": partitions[:1]},
        ],
        "forgotten_topics_data": [],
    }
    response = call(conn, 1, version, body)
    known, unknown = response["responses"]
    assert known["topic_id"] == topic_id
    one, zero, missing = known["partitions"]
    # offset 0 and leader epoch 0 patched in; every byte the CRC covers is the producer's
    assert one["records"][:8] == bytes(8) and one["records"][16:] == sent[16:]
    assert (one["high_watermark"], zero["high_watermark"], zero["records"]) == (4, 0, b"")
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert unknown["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
