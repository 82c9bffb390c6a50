"""A topic's compression.type with stock clients in their own processes (issue 33, item 2): a
confluent-kafka producer that does not compress writes to a zstd topic, every batch in the partition
log is zstd (read from the segment files), and a kafka-python consumer group member reads every record
back at the offsets the producer was acknowledged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kcoord.protocol.record_batch import ZSTD, iter_records, read_header
from tests.integration.conftest import Producers, Workers, unique
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

COUNT, KEYS = 2000, 13


def _stored_batches(data_dir: Path, topic: str) -> list[bytes]:
    """Every batch of partition 0 as the server wrote it (topics/<topic>-0/*.log)."""
    found = []
    for segment in sorted((data_dir / "topics" / f"{topic}-0").glob("*.log")):
        data, position = segment.read_bytes(), 0
        while position < len(data):
            header = read_header(data, position)
            found.append(data[position : position + header.size])
            position += header.size
    return found


def test_an_uncompressing_producer_to_a_zstd_topic_is_stored_as_zstd_and_read_back(
    server: KcoordServer, producers: Producers, workers: Workers
) -> None:
    topic = unique("zstd")
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": "zstd"})])[topic].result(30)

    producer = producers.spawn(
        "confluent-kafka", topic, COUNT, keys=KEYS, compression="none", idempotent=True
    )
    acked = producer.wait_finished(timeout=120)
    assert len(acked) == COUNT and not producer.failures
    by_offset = {offset: (key, value) for _, offset, key, value in acked}
    assert sorted(by_offset) == list(range(COUNT))

    stored = _stored_batches(server.data_dir, topic)
    assert stored and {read_header(b).compression for b in stored} == {ZSTD}
    assert {read_header(b).producer_id for b in stored} != {-1}  # idempotent: the producer id was kept
    records = [r for b in stored for r in iter_records(b)]
    assert {r.offset: (r.key, r.value) for r in records} == {
        o: (k.encode(), v.encode()) for o, (k, v) in by_offset.items()
    }

    consumer = workers.spawn("kafka-python", unique("readers"), [topic], consume=True)
    seen: dict[int, str] = {}

    def read_everything(event: dict[str, Any]) -> bool:
        if event["event"] == "records":
            seen.update((offset, key) for _, _, offset, key in event["records"])
        return len(seen) >= COUNT

    consumer.wait_event(read_everything, 90, "records up to the last offset")
    assert seen == {offset: key for offset, (key, _) in by_offset.items()}
    consumer.close()


@pytest.mark.parametrize("codec", ["uncompressed", "gzip", "snappy", "lz4"])
def test_kcoords_codec_writers_are_read_by_librdkafka(
    server: KcoordServer, producers: Producers, workers: Workers, codec: str
) -> None:
    """kafka-python produces zstd batches; the topic rebuilds them in `codec` (kcoord's own gzip, xerial
    snappy and Kafka-framed LZ4 writers); a confluent-kafka group member reads every record."""
    topic = unique(codec)
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": codec})])[topic].result(30)
    acked = producers.spawn("kafka-python", topic, 500, keys=KEYS, compression="zstd").wait_finished(120)
    assert len(acked) == 500
    expected = {read_header(b).compression for b in _stored_batches(server.data_dir, topic)}
    assert expected == {["uncompressed", "gzip", "snappy", "lz4"].index(codec)}

    consumer = workers.spawn("confluent-kafka", unique("readers"), [topic], consume=True)
    seen: dict[int, str] = {}

    def read_everything(event: dict[str, Any]) -> bool:
        if event["event"] == "records":
            seen.update((offset, key) for _, _, offset, key in event["records"])
        return len(seen) >= len(acked)

    consumer.wait_event(read_everything, 90, "records up to the last offset")
    assert seen == {offset: key for _, offset, key, _ in acked}
    consumer.close()
