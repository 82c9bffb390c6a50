"""What clients' own offset and admin APIs see: watermarks, offsets_for_times, seeking to a timestamp,
DeleteRecords, and compressed batches written by one library and read by another."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient

from tests.integration.conftest import create_topic, unique
from tests.kcoord_process import KcoordServer

pytestmark = pytest.mark.integration

BASE_TS = 1_700_000_000_000


def produce_with_timestamps(bootstrap: str, topic: str, count: int, compression: str = "none") -> None:
    """`count` messages to partition 0, message i at BASE_TS + 1000 * i."""
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 20})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=BASE_TS + 1000 * i)
    assert producer.flush(30) == 0


@pytest.fixture
def timed_topic(server: KcoordServer) -> str:
    name = unique("timed")
    create_topic(server.bootstrap, name, 1)
    produce_with_timestamps(server.bootstrap, name, 100)
    return name


def test_confluent_watermarks_offsets_for_times_and_delete_records(
    server: KcoordServer, timed_topic: str
) -> None:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": unique("q")})
    try:
        tp = TopicPartition(timed_topic, 0)
        assert consumer.get_watermark_offsets(tp, timeout=10) == (0, 100)
        found = consumer.offsets_for_times([TopicPartition(timed_topic, 0, BASE_TS + 42_500)], timeout=10)
        assert found[0].offset == 43
        after_end = consumer.offsets_for_times([TopicPartition(timed_topic, 0, BASE_TS + 10**9)], timeout=10)
        assert after_end[0].offset == -1  # no such record: librdkafka reports OFFSET_END
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        futures = admin.delete_records([TopicPartition(timed_topic, 0, 30)])
        deleted = futures[TopicPartition(timed_topic, 0)].result(timeout=30)
        assert deleted.low_watermark == 30
        assert consumer.get_watermark_offsets(tp, timeout=10) == (30, 100)
    finally:
        consumer.close()


def test_kafka_python_offsets_and_seek_to_timestamp(server: KcoordServer, timed_topic: str) -> None:
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
    try:
        tp = KpTopicPartition(timed_topic, 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 100}
        found = consumer.offsets_for_times({tp: BASE_TS + 7_000})[tp]
        assert (found.offset, found.timestamp) == (7, BASE_TS + 7_000)
        consumer.assign([tp])
        consumer.seek(tp, found.offset)
        first = next(r for batch in _poll_until_records(consumer) for r in batch)
        assert (first.offset, first.value) == (7, b"v7")
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            admin.delete_records({tp: 10})
        finally:
            admin.close()
        assert consumer.beginning_offsets([tp]) == {tp: 10}
    finally:
        consumer.close()


def _poll_until_records(consumer: KafkaConsumer) -> list[Any]:
    for _ in range(50):  # bounded: 50 polls of up to 200 ms
        polled = consumer.poll(timeout_ms=2000)
        if polled:
            return list(polled.values())
    raise AssertionError("no records polled")


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_codecs_read_by_kafka_python(server: KcoordServer, compression: str) -> None:
    topic = unique(f"codec-{compression}")
    create_topic(server.bootstrap, topic, 1)
    produce_with_timestamps(server.bootstrap, topic, 200, compression)
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
    try:
        tp = KpTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        for _ in range(100):  # bounded
            for batch in consumer.poll(timeout_ms=2000).values():
                values.extend(r.value for r in batch)
            if len(values) >= 200:
                break
        assert values == [b"v%d" % i for i in range(200)]
    finally:
        consumer.close()
