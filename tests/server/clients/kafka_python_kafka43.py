"""kafka-python 3.0.12 against a running kcoord, at the top versions both sides serve: the broker version
it infers from ApiVersions, then produce (acks=all), consume in a group, commit and read the commit back.
(kafka-python itself stays below the topic-id versions, Produce v13 and OffsetCommit/OffsetFetch v10,
which the wire tests cover.) Run as a subprocess; prints one JSON line.

usage: python kafka_python_kafka43.py BOOTSTRAP TOPIC GROUP
"""

from __future__ import annotations

import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

RECORDS = 7


def main(bootstrap: str, topic: str, group: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="k43-admin", request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", client_id="k43-producer")
    sent = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(RECORDS)]
    offsets = sorted((m.partition, m.offset) for m in (f.get(timeout=30) for f in sent))
    producer.flush()
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, client_id="k43-consumer",
        enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=1000,
    )  # fmt: skip
    values: list[str] = []
    deadline = time.monotonic() + 60
    while len(values) < RECORDS and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=2000).values():
            values.extend(r.value.decode() for r in records)
    consumer.commit({TopicPartition(topic, 1): OffsetAndMetadata(3, "k43", -1)})
    committed = consumer.committed(TopicPartition(topic, 1), metadata=True)
    result = {
        "producer_api_version": list(producer.config["api_version"]),
        "consumer_api_version": list(consumer.config["api_version"]),
        "offsets": offsets,
        "values": sorted(values),
        "committed": None if committed is None else [committed.offset, committed.metadata],
    }
    consumer.close()
    producer.close()
    admin.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:4])
