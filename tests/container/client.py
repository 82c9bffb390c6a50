"""Stock kafka-python, run as its own process by the container tests (never in the pytest process),
over SASL_SSL when the environment gives kafka-python's security settings (SECURITY below).

python -m tests.container.client produce BOOTSTRAP TOPIC COUNT
python -m tests.container.client commit BOOTSTRAP GROUP TOPIC PARTITION=OFFSET...
python -m tests.container.client offsets BOOTSTRAP GROUP        -> {"topic:partition": offset}
python -m tests.container.client consume BOOTSTRAP TOPIC        -> number of records from the start
python -m tests.container.client ends BOOTSTRAP TOPIC           -> {"partition": end offset}
"""

from __future__ import annotations

import json
import os
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

# kafka-python's security settings from the environment, as examples/compose/*.py take them
# (docker-compose.secure.yml's names): none set means PLAINTEXT.
SECURITY = {
    name.lower(): os.environ[name]
    for name in (
        "SECURITY_PROTOCOL",
        "SASL_MECHANISM",
        "SASL_PLAIN_USERNAME",
        "SASL_PLAIN_PASSWORD",
        "SSL_CAFILE",
    )
    if os.environ.get(name)
}


def main(argv: list[str]) -> None:
    command, bootstrap, *rest = argv
    if command == "produce":
        topic, count = rest[0], int(rest[1])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **SECURITY)
        for i in range(count):
            producer.send(topic, key=f"k{i % 7}".encode(), value=f"v{i}".encode())
        producer.flush()
        producer.close()
        print(json.dumps({"produced": count}))
    elif command == "commit":
        group, topic, *pairs = rest
        offsets = {}
        for pair in pairs:
            partition, offset = pair.split("=")
            offsets[TopicPartition(topic, int(partition))] = OffsetAndMetadata(int(offset), "", -1)
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, **SECURITY
        )
        consumer.assign(list(offsets))
        consumer.commit(offsets, timeout_ms=5000)  # a commit the coordinator keeps refusing fails
        consumer.close()
        print(json.dumps({"committed": len(offsets)}))
    elif command == "offsets":
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, **SECURITY)
        found = admin.list_group_offsets(rest[0])[rest[0]]
        admin.close()
        print(json.dumps({f"{tp.topic}:{tp.partition}": meta.offset for tp, meta in found.items()}))
    elif command in ("consume", "ends"):
        topic = rest[0]
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **SECURITY)
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = consumer.end_offsets(partitions)
        if command == "ends":
            print(json.dumps({str(tp.partition): end for tp, end in ends.items()}))
            return
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        seen = 0
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            seen += sum(len(records) for records in consumer.poll(timeout_ms=2000).values())
        consumer.close()
        print(json.dumps({"consumed": seen}))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
