"""Stock kafka-python inside a second container (the example clients image): produce COUNT records to
TOPIC, read them back in GROUP and commit, then print one JSON line with the brokers Metadata named.

Run as `python -c "$(cat in_container_client.py)" BOOTSTRAP TOPIC GROUP COUNT` (the image's
entrypoint is its venv's python); nothing from kcoord is needed inside.
"""

import json
import sys

from kafka import KafkaConsumer, KafkaProducer

bootstrap, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
for i in range(count):
    producer.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(timeout=30)
brokers = sorted(f"{b.host}:{b.port}" for b in producer._metadata.brokers())
producer.close()

consumer = KafkaConsumer(
    topic,
    bootstrap_servers=bootstrap,
    group_id=group,
    auto_offset_reset="earliest",
    enable_auto_commit=False,
    consumer_timeout_ms=20000,  # bounded: the test fails on a short list rather than hanging
)
values = []
for message in consumer:
    values.append(message.value.decode())
    if len(values) == count:
        break
consumer.commit()
consumer.close()
print(json.dumps({"brokers": brokers, "values": values}))
