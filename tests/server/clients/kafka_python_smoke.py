"""kafka-python against a running kcoord: admin Metadata/CreateTopics, one consumer joins a 6-partition
topic, commits with metadata and reads it back. Run as a subprocess; prints one JSON line.

usage: python kafka_python_smoke.py BOOTSTRAP TOPIC GROUP
"""

from __future__ import annotations

import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata


def main(bootstrap: str, topic: str, group: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="smoke-admin", request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])
    listed = sorted(admin.list_topics())
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="smoke-consumer",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=2000)
    assignment = sorted(tp.partition for tp in consumer.assignment())
    consumer.commit({TopicPartition(topic, 2): OffsetAndMetadata(0, "smoke-meta", -1)})
    committed = consumer.committed(TopicPartition(topic, 2), metadata=True)
    positions = {tp.partition: consumer.position(tp) for tp in consumer.assignment()}
    groups = (
        [g[0] if isinstance(g, tuple) else g for g in admin.list_consumer_groups()]
        if hasattr(admin, "list_consumer_groups")
        else []
    )
    consumer.close()
    admin.close()
    print(
        json.dumps(
            {
                "topics": listed,
                "assignment": assignment,
                "committed": [committed.offset, committed.metadata] if committed is not None else None,
                "positions": positions,
                "groups": [str(g) for g in groups],
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
