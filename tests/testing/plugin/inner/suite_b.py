"""Inner suite B (run by test_plugin.py in a pytester subprocess): the marker, unique names, advance()
expiring a confluent-kafka member, aiokafka in the test's own loop, kcoord_factory and restarts."""

import asyncio
import os
import pathlib
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kcoord.testing.settings import SettingsError

OUT = pathlib.Path(os.environ["KCOORD_PLUGIN_OUT"])


def note(name, server):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    OUT.joinpath(f"{name}.txt").write_text(f"{worker} {server.bootstrap_servers}")


@pytest.mark.kcoord(topics={"orders": 3})
def test_marker_seeds_topics(kcoord):
    note("b", kcoord)
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    assert producer.partitions_for("orders") == {0, 1, 2}  # an auto-created topic would have one
    producer.close()


@pytest.mark.kcoord(group_max_session_timeout_ms=5000)
def test_marker_settings_last_one_test_1(kcoord):
    assert kcoord.configure()["group_max_session_timeout_ms"] == 5000


def test_marker_settings_last_one_test_2(kcoord):
    assert kcoord.configure()["group_max_session_timeout_ms"] == 1_800_000  # the reset put it back


def test_names_are_unique_per_test_and_worker(kcoord_names, kcoord_topic, kcoord_group):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    assert kcoord_topic == kcoord_names.topic() and kcoord_group == kcoord_names.group()
    assert kcoord_topic.startswith("test_names_are_unique_per_test_and_worker-" + worker + "-")
    assert kcoord_names.topic("payments") not in (kcoord_topic, kcoord_names.topic())
    OUT.joinpath(f"names-{worker}.txt").write_text(kcoord_topic)


def poll_until(consumer, done, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out polling"
        consumer.poll(0.1)


def test_advance_expires_a_confluent_kafka_members_session(kcoord, kcoord_topic, kcoord_group):
    kcoord.create_topic(kcoord_topic, 2)
    events = []
    consumer = Consumer(
        {
            "bootstrap.servers": kcoord.bootstrap_servers,
            "group.id": kcoord_group,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(
        [kcoord_topic],
        on_assign=lambda c, p: events.append("assigned"),
        on_lost=lambda c, p: events.append("lost"),
    )
    try:
        poll_until(consumer, lambda: "assigned" in events)
        before = kcoord.wait_stable(kcoord_group)
        [member] = before.members
        assert member.assignment == {kcoord_topic: [0, 1]}
        moved = kcoord.advance(7)  # past the 6 s session: the member expires now, no sleeping
        assert moved["advanced_ms"] == 7000 and moved["fired"] >= 1
        # (after advance(), which skips under --kafka-bootstrap: DescribeGroups carries no generation)
        assert before.generation == 1
        # As on Kafka: the rebalance its expiry started completes with nobody, generation 2, Empty. The
        # group stays (the offset retention check, 10 minutes away, is not in the window).
        after = kcoord.group(kcoord_group)
        assert after is not None, "the Empty group was deleted: advance() ran a check not yet due"
        assert (after.state, after.generation, after.members) == ("Empty", 2, [])
        assert any(f"member_id={member.member_id} session expired" in line for line in kcoord.log_lines())
        # librdkafka's next heartbeat meets UNKNOWN_MEMBER_ID: the partitions are lost, it joins again
        poll_until(consumer, lambda: events.count("assigned") == 2)
        assert "lost" in events
        rejoined = kcoord.wait_stable(kcoord_group)
        assert [m.member_id for m in rejoined.members] != [member.member_id]
        assert rejoined.generation == 3
    finally:
        consumer.close()


@pytest.mark.asyncio
async def test_aiokafka_in_the_tests_own_loop(kcoord, kcoord_topic, kcoord_group):
    producer = AIOKafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    await producer.start()
    await producer.send_and_wait(kcoord_topic, b"hello", partition=0)
    await producer.stop()
    consumer = AIOKafkaConsumer(
        kcoord_topic,
        group_id=kcoord_group,
        bootstrap_servers=kcoord.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        message = await asyncio.wait_for(consumer.getone(), 30)
        assert message.value == b"hello"
        group = await kcoord.aio.wait_stable(kcoord_group)  # awaits: the consumer keeps heartbeating
        assert [m.assignment for m in group.members] == [{kcoord_topic: [0]}]
        await consumer.commit()
        assert await kcoord.aio.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    finally:
        await consumer.stop()


def test_restart_keeps_committed_offsets(kcoord_factory, kcoord_topic, kcoord_group):
    server = kcoord_factory(fsync="always")
    producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers, acks="all")
    for i in range(3):
        producer.send(kcoord_topic, str(i).encode(), partition=0).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap_servers, group_id=kcoord_group, enable_auto_commit=False
    )
    tp = TopicPartition(kcoord_topic, 0)
    consumer.commit({tp: OffsetAndMetadata(2, "", -1)})
    port = server.port
    server.restart()
    assert server.port == port  # clients reconnect to the address they bootstrapped from
    assert server.committed(kcoord_group) == {(kcoord_topic, 0): 2}
    assert [r.value for r in server.records(kcoord_topic)] == [b"0", b"1", b"2"]
    assert consumer.committed(tp) == 2  # the same client, reconnected
    server.kill()  # a crash: with fsync=always every acknowledged write is on disk
    server.restart()
    assert server.committed(kcoord_group) == {(kcoord_topic, 0): 2}
    assert len(server.records(kcoord_topic)) == 3
    consumer.close()


def test_factory_settings_are_kcoord_serve_flags(kcoord_factory):
    with pytest.raises(SettingsError, match="unknown setting no_such_flag"):
        kcoord_factory(no_such_flag=1)
    with pytest.raises(SettingsError, match="--fsync"):
        kcoord_factory(fsync="sometimes")
    server = kcoord_factory(num_partitions=3)
    producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers)
    assert producer.partitions_for("auto") == {0, 1, 2}  # auto-created with --num-partitions 3
    producer.close()
