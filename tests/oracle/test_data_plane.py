"""Produce, ListOffsets, Fetch and DeleteRecords against Apache Kafka 4.3: the same batches (built by
kafka-python's DefaultRecordBatchBuilder, an encoder independent of kcoord's) to a fresh topic on both,
then every offset, watermark and error compared, and the fetched bytes themselves."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.protocol.frames import encode_request
from tests.oracle.diff import Pair, assert_same, unexplained
from tests.oracle.scenario import create_on_both, topic, unique

pytestmark = pytest.mark.xdist_group("kafka_oracle")

PRODUCE_V, FETCH_V, LIST_OFFSETS_V, DELETE_RECORDS_V = 9, 12, 7, 2
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
# Two hours ago: within Kafka's 7-day time retention. Records dated 2023 were deleted by the oracle's
# retention check once the broker had run five minutes (seen in tests/oracle/test_share_groups_cli.py).
BASE_TS = (int(time.time()) - 2 * 3600) * 1000


def batch(count: int, first: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    for i in range(count):
        builder.append(i, BASE_TS + first + i, b"k%d" % (first + i), b"v%d" % (first + i), [])
    return bytes(builder.build())


def produce(name: str, partition: int, records: bytes) -> dict[str, Any]:
    data = [{"name": name, "partition_data": [{"index": partition, "records": records}]}]
    return {"transactional_id": None, "acks": -1, "timeout_ms": 10_000, "topic_data": data}


def list_offsets(name: str, partition: int, timestamp: int) -> dict[str, Any]:
    parts = [{"partition_index": partition, "timestamp": timestamp, "current_leader_epoch": -1}]
    return {"replica_id": -1, "isolation_level": 0, "topics": [{"name": name, "partitions": parts}]}


def fetch(name: str, partition: int, offset: int) -> dict[str, Any]:
    part = {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": name, "partitions": [part]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def delete_records(name: str, partition: int, offset: int) -> dict[str, Any]:
    parts = [{"partition_index": partition, "offset": offset}]
    return {"topics": [{"name": name, "partitions": parts}], "timeout_ms": 10_000}


@pytest.fixture
def filled(pair: Pair) -> str:
    """A two-partition topic on both brokers, with 5 + 3 records in partition 0."""
    name = unique("data")
    create_on_both(pair, topic(name, 2))
    for first, count in ((0, 5), (5, 3)):
        answers = pair.ask(0, PRODUCE_V, produce(name, 0, batch(count, first)))
        assert_same([f"Produce {line}" for line in _lines(pair, *answers)])
    return name


def _lines(pair: Pair, kafka: Any, kcoord: Any) -> list[str]:
    return [f"{path}: kafka={a!r} kcoord={b!r}" for path, a, b in pair.diff(kafka, kcoord)]


def _fetch(pair: Pair, body: dict[str, Any]) -> list[str]:
    return pair.compare("Fetch", 1, FETCH_V, body)


def test_fetch_read_uncommitted_has_null_aborted_transactions(pair: Pair, filled: str) -> None:
    assert_same(pair.compare("Fetch", 1, FETCH_V, fetch(filled, 0, 0)))


def test_produced_records_are_listed_and_fetched_as_kafka(pair: Pair, filled: str) -> None:
    found: list[str] = []
    for timestamp in (EARLIEST, LATEST, MAX_TIMESTAMP, BASE_TS + 6, BASE_TS + 100):
        found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(filled, 0, timestamp))
    found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(filled, 1, LATEST))
    for offset in (0, 5, 8, 9):
        found += _fetch(pair, fetch(filled, 0, offset))
    assert_same(found)


def test_delete_records_moves_the_log_start_as_kafka(pair: Pair, filled: str) -> None:
    found = pair.compare("DeleteRecords", 21, DELETE_RECORDS_V, delete_records(filled, 0, 3))
    found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(filled, 0, EARLIEST))
    found += _fetch(pair, fetch(filled, 0, 0))
    found += _fetch(pair, fetch(filled, 0, 3))
    found += pair.compare("DeleteRecords", 21, DELETE_RECORDS_V, delete_records(filled, 0, 100))
    found += pair.compare("DeleteRecords", 21, DELETE_RECORDS_V, delete_records(filled, 0, -1))
    found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(filled, 0, EARLIEST))
    assert_same(found)


def test_unknown_topics_and_partitions_are_refused_as_kafka(pair: Pair, filled: str) -> None:
    missing = unique("missing")
    found = pair.compare("Produce", 0, PRODUCE_V, produce(missing, 0, batch(1, 0)))
    found += pair.compare("Produce", 0, PRODUCE_V, produce(filled, 7, batch(1, 0)))
    found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(missing, 0, LATEST))
    found += pair.compare("ListOffsets", 2, LIST_OFFSETS_V, list_offsets(filled, 7, LATEST))
    found += _fetch(pair, fetch(missing, 0, 0))
    found += _fetch(pair, fetch(filled, 7, 0))
    found += pair.compare("DeleteRecords", 21, DELETE_RECORDS_V, delete_records(missing, 0, 1))
    found += pair.compare("DeleteRecords", 21, DELETE_RECORDS_V, delete_records(filled, 7, 1))
    assert_same(found)


def test_pipelined_requests_see_the_effects_of_earlier_ones_as_on_kafka(pair: Pair, filled: str) -> None:
    """Issue 33 item 1: on one connection, in one send, each request observes every earlier one (Kafka
    mutes a channel while a request is in flight, SocketServer.Processor): a Produce then Fetch and
    ListOffsets, a DeleteRecords then ListOffsets and Fetch."""
    requests: list[tuple[int, int, dict[str, Any]]] = [
        (0, PRODUCE_V, produce(filled, 0, batch(2, 8))),
        (2, LIST_OFFSETS_V, list_offsets(filled, 0, LATEST)),
        (1, FETCH_V, fetch(filled, 0, 8)),
        (21, DELETE_RECORDS_V, delete_records(filled, 0, 4)),
        (2, LIST_OFFSETS_V, list_offsets(filled, 0, EARLIEST)),
        (1, FETCH_V, fetch(filled, 0, 2)),
    ]
    answers = {}
    for side in (pair.kafka, pair.kcoord):
        frames = b"".join(
            encode_request(key, version, side.correlation_id + i + 1, body, client_id="oracle")
            for i, (key, version, body) in enumerate(requests)
        )
        side.sock.sendall(frames)  # one send: the broker has every request before answering any
        answers[side.name] = [
            side.receive(key, version, side.correlation_id + i + 1)
            for i, (key, version, _) in enumerate(requests)
        ]
        side.correlation_id += len(requests)
    found: list[str] = []
    for (key, _, _), kafka, kcoord in zip(requests, answers["kafka"], answers["kcoord"], strict=True):
        api = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 21: "DeleteRecords"}[key]
        found += unexplained(api, pair.diff(kafka, kcoord))
    assert_same(found)
