"""Inner suite A (run by test_plugin.py in a pytester subprocess, as a user runs the plugin): the
session server, reset isolation between two tests, a fault as kafka-python sees it, the request log."""

import os
import pathlib
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

OUT = pathlib.Path(os.environ["KCOORD_PLUGIN_OUT"])
KEPT = {}  # a producer opened by one test and used by the next: a reset keeps connections


def note(name, server):
    """Which worker ran this file against which server (read by the outer test)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    OUT.joinpath(f"{name}.txt").write_text(f"{worker} {server.bootstrap_servers}")


def poll_records(consumer, want, timeout=20.0):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=2000).values():
            got += batch
    assert len(got) >= want, f"consumed {len(got)} of {want} records in {timeout:g} s"
    return got


def test_session_server_is_ready_on_return(kcoord_server, kcoord_topic):
    note("a", kcoord_server)
    producer = KafkaProducer(bootstrap_servers=kcoord_server.bootstrap_servers)
    producer.send(kcoord_topic, b"first").get(timeout=10)
    producer.close()
    assert [r.value for r in kcoord_server.records(kcoord_topic)] == [b"first"]


def test_reset_isolation_1_leaves_state_behind(kcoord):
    KEPT["producer"] = producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    kcoord.create_topic("leftover", 2)
    producer.send("leftover", b"v", partition=1).get(timeout=10)
    consumer = KafkaConsumer(
        bootstrap_servers=kcoord.bootstrap_servers, group_id="leftover-group", enable_auto_commit=False
    )
    consumer.commit({TopicPartition("leftover", 1): OffsetAndMetadata(1, "", -1)})
    consumer.close()
    assert kcoord.committed("leftover-group") == {("leftover", 1): 1}


def test_reset_isolation_2_sees_nothing_of_it(kcoord):
    assert kcoord.requests() == []  # the previous test's requests are gone with the rest
    assert kcoord.group("leftover-group") is None
    assert kcoord.committed("leftover-group") == {}
    kcoord.create_topic("leftover", 1)  # no 409: the topic is gone, records and all
    assert kcoord.records("leftover") == []
    producer = KEPT.pop("producer")  # opened before the reset: its connections still work
    producer.send("after-reset", b"still here").get(timeout=10)
    producer.close()
    assert [r.value for r in kcoord.records("after-reset")] == [b"still here"]


def test_kafka_python_consumer_retries_not_coordinator(kcoord, kcoord_topic, kcoord_group):
    kcoord.create_topic(kcoord_topic, 1)
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    producer.send(kcoord_topic, b"one").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        kcoord_topic,
        group_id=kcoord_group,
        bootstrap_servers=kcoord.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        retry_backoff_ms=50,
    )
    poll_records(consumer, 1)
    fault = kcoord.fail("OffsetCommit", "NOT_COORDINATOR", group=kcoord_group)
    consumer.commit()  # NotCoordinatorError is retriable: kafka-python finds the coordinator again, retries
    assert kcoord.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    [fired] = kcoord.fired()
    assert (fired.id, fired.api, fired.error, fired.fired, fired.remaining) == (
        fault.id,
        "OffsetCommit",
        "NOT_COORDINATOR",
        1,
        0,
    )
    log = kcoord.requests()
    commits = [e for e in log if e.api == "OffsetCommit"]
    assert [e.error_codes for e in commits] == [[16], []]
    assert commits[0].fault == fault.id
    between = log[log.index(commits[0]) + 1 : log.index(commits[1])]
    assert "FindCoordinator" in [e.api for e in between]
    consumer.close()


def test_kafka_python_producer_retries_a_dropped_connection(kcoord, kcoord_topic):
    kcoord.create_topic(kcoord_topic, 1)
    delayed = kcoord.delay("Metadata", 100)
    dropped = kcoord.disconnect("Produce")
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers, reconnect_backoff_ms=20)
    producer.send(kcoord_topic, b"once").get(timeout=20)  # the first Produce is never answered: retried
    producer.close()
    assert [r.value for r in kcoord.records(kcoord_topic)] == [b"once"]  # idempotent: written once
    assert [(f.id, f.kind, f.api, f.fired) for f in kcoord.fired()] == [
        (delayed.id, "delay", "Metadata", 1),
        (dropped.id, "disconnect", "Produce", 1),
    ]
    log = kcoord.requests()
    [slow] = [e for e in log if e.fault == delayed.id]
    assert slow.api == "Metadata" and slow.duration_ms >= 100
    produces = [e for e in log if e.api == "Produce"]
    assert [e.fault for e in produces] == [dropped.id, None]
