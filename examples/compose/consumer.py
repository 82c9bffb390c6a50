"""One member of consumer group GROUP (run two of these): consume TOPIC, commit after every batch,
and exit 0 once the group has committed every one of the MESSAGES records the producer sends.
"""

import os
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

BOOTSTRAP = os.environ.get("BOOTSTRAP", "kcoord:9092")
TOPIC = os.environ.get("TOPIC", "orders")
GROUP = os.environ.get("GROUP", "order-processors")
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

consumer = KafkaConsumer(
    TOPIC,
    bootstrap_servers=BOOTSTRAP,
    group_id=GROUP,
    auto_offset_reset="earliest",
    enable_auto_commit=False,
    # Fast rebalances for tests: a short session timeout (kcoord's minimum is Kafka's, 6 s).
    session_timeout_ms=6000,
    heartbeat_interval_ms=1000,
    **SECURITY,
)


def group_done() -> bool:
    """Has the whole group (not just this member) committed up to the end of every partition?"""
    try:
        partitions = [TopicPartition(TOPIC, p) for p in consumer.partitions_for_topic(TOPIC) or ()]
        if not partitions:
            return False
        ends = consumer.end_offsets(partitions)
    except (KafkaError, KeyError):
        # A partition without a leader just now (a new topic, a cluster node failing over): kafka-python
        # 3.0 raises LeaderNotAvailableError or KeyError for it. Not done yet; ask again after the next
        # poll.
        return False
    committed = {tp: consumer.committed(tp) or 0 for tp in partitions}
    return sum(ends.values()) >= MESSAGES and all(committed[tp] >= ends[tp] for tp in partitions)


consumed = 0
partitions: set[int] = set()
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    batch = consumer.poll(timeout_ms=500)
    for tp, records in batch.items():
        consumed += len(records)
        partitions.add(tp.partition)
    if batch:
        consumer.commit()
    elif group_done():
        break
else:
    raise SystemExit(f"consumer: timed out with {consumed} records consumed")
consumer.close()
print(f"consumer: consumed {consumed} records from partitions {sorted(partitions)}", flush=True)
