"""Produce MESSAGES keyed records to TOPIC with stock kafka-python, then exit 0.

BOOTSTRAP is the one address clients need: kcoord answers Metadata and FindCoordinator with its
advertised listener (KCOORD_ADVERTISED_LISTENER), so that is what every later connection uses.
"""

import json
import os
import time

from kafka import KafkaProducer

BOOTSTRAP = os.environ.get("BOOTSTRAP", "kcoord:9092")
TOPIC = os.environ.get("TOPIC", "orders")
MESSAGES = int(os.environ.get("MESSAGES", "1000"))
# A pause between sends (default none): spreads the records over time, e.g. to stop a cluster node meanwhile.
INTERVAL_MS = int(os.environ.get("INTERVAL_MS", "0"))
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
sent = []
for i in range(MESSAGES):
    value = json.dumps({"order": i}).encode()
    sent.append(producer.send(TOPIC, key=f"customer-{i % 50}".encode(), value=value))
    if INTERVAL_MS:
        time.sleep(INTERVAL_MS / 1000)
producer.flush()
for future in sent:
    future.get(timeout=0)  # raises (exit non-zero) if a record was not acknowledged
producer.close()
print(f"producer: sent {MESSAGES} records to {TOPIC}", flush=True)
