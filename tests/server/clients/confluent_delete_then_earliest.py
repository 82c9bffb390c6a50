"""confluent-kafka (librdkafka) against a running kcoord: DeleteRecords, then ListOffsets(EARLIEST)
issued before the first is answered, as an application that fires both admin calls does. librdkafka sends
both on its one connection to the partition's leader. Run as a subprocess; prints one JSON line.

usage: python confluent_delete_then_earliest.py BOOTSTRAP TOPIC
"""

from __future__ import annotations

import json
import sys

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # type: ignore[attr-defined]


def main(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(5):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0, "records left unsent"
    partition = TopicPartition(topic, 0)
    deleted = admin.delete_records([TopicPartition(topic, 0, 2)], request_timeout=30)
    spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    earliest = admin.list_offsets({partition: spec}, request_timeout=30)
    low_watermark = next(iter(deleted.values())).result(30).low_watermark
    offset = next(iter(earliest.values())).result(30).offset
    print(json.dumps({"low_watermark": low_watermark, "earliest": offset}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
