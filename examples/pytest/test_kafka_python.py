"""kafka-python against kcoord: the `kcoord` fixture is one in-process server, reset before each test."""

import pytest
from kafka import KafkaConsumer, KafkaProducer


def consume(consumer, count, timeout_s=20):
    # Polls of 2 s: kafka-python 3.0.12 can drop a group join that outlives its poll's timeout, and a
    # short poll then waits for records it never fetches (tests/integration/FINDINGS.md).
    records = []
    for _ in range(int(timeout_s / 2)):
        for batch in consumer.poll(timeout_ms=2000).values():
            records += batch
        if len(records) >= count:
            return records
    raise AssertionError(f"consumed {len(records)} of {count} records")


@pytest.mark.kcoord(topics={"orders": 3})
def test_orders_are_produced_to_three_partitions(kcoord):
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    for i in range(6):
        producer.send("orders", f"order-{i}".encode(), partition=i % 3)
    producer.flush()
    producer.close()
    records = kcoord.records("orders")  # what the server holds, in (partition, offset) order
    assert [(r.partition, r.offset) for r in records] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_a_consumer_commits_its_position(kcoord, kcoord_topic, kcoord_group):
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    producer.send(kcoord_topic, b"hello").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        kcoord_topic,
        group_id=kcoord_group,
        bootstrap_servers=kcoord.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    assert [r.value for r in consume(consumer, 1)] == [b"hello"]
    consumer.commit()
    assert kcoord.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    consumer.close()


def test_the_consumer_retries_a_coordinator_move(kcoord, kcoord_topic, kcoord_group):
    consumer = KafkaConsumer(
        kcoord_topic,
        group_id=kcoord_group,
        bootstrap_servers=kcoord.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    producer.send(kcoord_topic, b"one").get(timeout=10)
    producer.close()
    consume(consumer, 1)
    kcoord.fail("OffsetCommit", "NOT_COORDINATOR", group=kcoord_group)  # the next commit only
    consumer.commit()  # kafka-python looks the coordinator up again and retries
    assert kcoord.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    assert [f.error for f in kcoord.fired()] == ["NOT_COORDINATOR"]
    assert [e.error_codes for e in kcoord.requests() if e.api == "OffsetCommit"] == [[16], []]
    consumer.close()
