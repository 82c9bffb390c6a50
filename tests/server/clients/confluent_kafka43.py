"""confluent-kafka (librdkafka) against a running kcoord at the top versions both serve: produce
(acks=all), consume in a group, commit and read the commit back, and describe the topic (librdkafka's
describe_topics uses DescribeTopicPartitions when the broker serves it). Run as a subprocess; prints one
JSON line.

usage: python confluent_kafka43.py BOOTSTRAP TOPIC GROUP
"""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

RECORDS = 6


def main(bootstrap: str, topic: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(RECORDS):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    assert producer.flush(30) == 0, "records left unsent"
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "session.timeout.ms": 10000,
    })  # fmt: skip
    consumer.subscribe([topic])
    values: list[str] = []
    deadline = time.monotonic() + 60
    while len(values) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
    consumer.commit(offsets=[TopicPartition(topic, 2, 2)], asynchronous=False)
    (committed,) = consumer.committed([TopicPartition(topic, 2)], timeout=30)
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    consumer.close()
    print(json.dumps({
        "values": sorted(values),
        "committed": committed.offset,
        "partitions": [p.id for p in described.partitions],
        "leaders": sorted({p.leader.id for p in described.partitions}),
    }))  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:4])
