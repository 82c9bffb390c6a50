"""Produce MESSAGES keyed records to TOPIC with stock kafka-python, then exit 0.

BOOTSTRAP is the one address clients need: kcoord answers Metadata and FindCoordinator with its
advertised listener (KCOORD_ADVERTISED_LISTENER), so that is what every later connection uses.
"""

import json
import os

from kafka import KafkaProducer

BOOTSTRAP = os.environ.get("BOOTSTRAP", "kcoord:9092")
TOPIC = os.environ.get("TOPIC", "orders")
MESSAGES = int(os.environ.get("MESSAGES", "1000"))
# Security settings when docker-compose.secure.yml sets them: kafka-python's own option names, upper-cased.
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

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", linger_ms=5, **SECURITY)
for i in range(MESSAGES):
    value = json.dumps({"order": i}).encode()
    producer.send(TOPIC, key=f"customer-{i % 50}".encode(), value=value)
producer.flush()
producer.close()
print(f"producer: sent {MESSAGES} records to {TOPIC}", flush=True)
