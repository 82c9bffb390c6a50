"""One application's day with confluent-kafka (librdkafka) against a broker: what it sees, as one
JSON line free of anything a broker makes up (ids, hosts, ports, times), so that the lines of two
brokers compare field by field. Run as a subprocess (tests/oracle/test_clients.py).

usage: python -m tests.oracle.clients.confluent_scenario BOOTSTRAP TOPIC GROUP
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

COUNT = 10


def _error(future: Any) -> str:
    """The broker's error code name of an admin future, or NONE."""
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "NONE"


def admin_part(admin: AdminClient, topic: str) -> dict[str, Any]:
    created = admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "3600000"})])
    refused = admin.create_topics([NewTopic("bad/name", 1, 1), NewTopic(topic, 1, 1)])
    refusals = {"<topic>" if n == topic else n: _error(f) for n, f in refused.items()}
    out = {"created": _error(created[topic]), "refused": refusals}
    deadline = time.monotonic() + 30
    while topic not in admin.list_topics(timeout=10).topics or not _led(admin, topic):
        assert time.monotonic() < deadline, "topic never appeared"
        time.sleep(0.05)  # metadata poll
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    out["partitions"] = sorted(meta.partitions)
    return out


def _led(admin: AdminClient, topic: str) -> bool:
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    return meta.error is None and all(p.leader >= 0 for p in meta.partitions.values())


def produce(bootstrap: str, topic: str) -> dict[str, int]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    offsets: dict[int, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        offsets[msg.partition()] = max(offsets.get(msg.partition(), -1), msg.offset())

    for i in range(COUNT):
        producer.produce(topic, key=b"key-%d" % (i % 4), value=b"value-%d" % i, on_delivery=delivered)
    assert producer.flush(30) == 0
    return {str(p): o for p, o in sorted(offsets.items())}


def consume(bootstrap: str, topic: str, group: str) -> dict[str, Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < COUNT and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(f"{msg.partition()}:{msg.offset()}:{msg.key().decode()}:{msg.value().decode()}")
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    consumer.close()
    return {"records": sorted(seen), "committed": [tp.offset for tp in committed]}


def describe(admin: AdminClient, topic: str, group: str) -> dict[str, Any]:
    (described,) = admin.describe_consumer_groups([group]).values()
    desc = described.result(timeout=30)
    deleted = admin.delete_records([TopicPartition(topic, 0, 1)])
    low = [f.result(timeout=30).low_watermark for f in deleted.values()]
    return {
        "group_state": str(desc.state),
        "members": len(desc.members),
        "assignor": desc.partition_assignor,
        "deleted_low_watermarks": low,
        "earliest": _offsets(admin, topic, OffsetSpec.earliest()),
        "latest": _offsets(admin, topic, OffsetSpec.latest()),
    }


def _offsets(admin: AdminClient, topic: str, spec: Any) -> list[tuple[int, int]]:
    """list_offsets of every partition, asked again (bounded) while librdkafka's own metadata cache does
    not know a partition yet ("Local: Unknown partition", a local, retriable error seen once in CI)."""
    for attempt in range(20):
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in range(3)})
        try:
            return sorted((tp.partition, f.result(timeout=30).offset) for tp, f in futures.items())
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION or attempt == 19:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def main(bootstrap: str, topic: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = admin_part(admin, topic)
    out["produced_last_offsets"] = produce(bootstrap, topic)
    out.update(consume(bootstrap, topic, group))
    out.update(describe(admin, topic, group))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(*sys.argv[1:4])
