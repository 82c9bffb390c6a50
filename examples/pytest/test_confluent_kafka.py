"""confluent-kafka (librdkafka) against kcoord: a group, and a session that expires when the test
moves the server's clock (no sleeping for the session timeout)."""

import time

from confluent_kafka import Consumer, Producer


def poll_until(consumer, done, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        consumer.poll(0.1)


def test_a_produced_record_is_consumed(kcoord, kcoord_topic, kcoord_group):
    producer = Producer({"bootstrap.servers": kcoord.bootstrap_servers})
    producer.produce(kcoord_topic, b"payload", key=b"k")
    assert producer.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kcoord.bootstrap_servers,
            "group.id": kcoord_group,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([kcoord_topic])
    try:
        message = None
        deadline = time.monotonic() + 30
        while message is None or message.error():
            assert time.monotonic() < deadline, "nothing consumed"
            message = consumer.poll(0.2)
        assert (message.key(), message.value()) == (b"k", b"payload")
    finally:
        consumer.close()


def test_a_silent_member_expires_when_the_clock_moves(kcoord, kcoord_topic, kcoord_group):
    kcoord.create_topic(kcoord_topic, partitions=2)
    assigned = []
    consumer = Consumer(
        {
            "bootstrap.servers": kcoord.bootstrap_servers,
            "group.id": kcoord_group,
            "session.timeout.ms": 10_000,
        }
    )
    consumer.subscribe([kcoord_topic], on_assign=lambda c, partitions: assigned.append(partitions))
    try:
        poll_until(consumer, lambda: assigned)
        group = kcoord.wait_stable(kcoord_group)
        [member] = group.members
        assert member.assignment == {kcoord_topic: [0, 1]}
        kcoord.advance(11)  # 11 s later for the server: the session expired
        after = kcoord.group(kcoord_group)  # as on Kafka: the rebalance completed without the member
        assert after.generation >= 2 and member.member_id not in [m.member_id for m in after.members]
        poll_until(consumer, lambda: len(assigned) == 2)  # the client notices and joins again
        assert kcoord.wait_stable(kcoord_group).generation == 3  # expired (2), rejoined (3)
    finally:
        consumer.close()
