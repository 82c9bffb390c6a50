"""Inner suite: tests that fail on purpose while one of their requests is parked, held by a delay fault or
dropped by a disconnect fault, so the outer test can read that their reports show every request state.

The clients are closed by a fixture: its teardown runs after the report is made, so the report sees the
requests as the failure left them."""

import time

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer

WAIT_S = 30.0


@pytest.fixture
def closing():
    closers = []
    yield closers
    for close in closers:
        close()


def wait_for_entry(kcoord, matches, tick):
    """The first request-log entry `matches` accepts; `tick()` between looks keeps the clients going."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = [e for e in kcoord.requests() if matches(e)]
        if found:
            return found[0]
        tick()
    raise AssertionError("the request never showed in the request log")


def test_failure_with_a_parked_join_group(kcoord, kcoord_topic, kcoord_group, closing):
    kcoord.create_topic(kcoord_topic, 1)
    # kafka-python rejoins only inside poll(): not polled again, it holds the next rebalance open
    bootstrap = kcoord.bootstrap_servers
    first = KafkaConsumer(
        kcoord_topic, group_id=kcoord_group, bootstrap_servers=bootstrap, client_id="first-member"
    )
    closing.append(first.close)
    deadline = time.monotonic() + WAIT_S
    # Polled until the server has the group Stable, then never again (its own assignment() may lag:
    # kafka-python sometimes rejoins once more, inside poll(), after its first assignment)
    while (group := kcoord.group(kcoord_group)) is None or group.state != "Stable":
        assert time.monotonic() < deadline, "the first member's group never became Stable"
        first.poll(timeout_ms=50)
    second = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": kcoord_group, "client.id": "parked-member"}
    )
    closing.append(second.close)
    second.subscribe([kcoord_topic])
    wait_for_entry(
        kcoord,
        lambda e: e.api == "JoinGroup" and e.client_id == "parked-member" and e.state == "parked",
        lambda: second.poll(0.05),
    )
    pytest.fail("deliberately, with a JoinGroup parked in the rebalance")


def test_failure_with_a_request_held_by_a_delay_fault(kcoord, closing):
    fault = kcoord.delay("Metadata", 600_000)
    producer = Producer({"bootstrap.servers": kcoord.bootstrap_servers, "client.id": "delayed-client"})
    closing.append(producer.close)
    wait_for_entry(kcoord, lambda e: (e.fault, e.state) == (fault.id, "delayed"), lambda: producer.poll(0.05))
    pytest.fail("deliberately, with a Metadata request a delay fault holds")


def test_failure_after_a_disconnect_fault(kcoord, closing):
    fault = kcoord.disconnect("Metadata")
    producer = Producer({"bootstrap.servers": kcoord.bootstrap_servers, "client.id": "dropped-client"})
    closing.append(producer.close)
    wait_for_entry(kcoord, lambda e: (e.fault, e.state) == (fault.id, "dropped"), lambda: producer.poll(0.05))
    pytest.fail("deliberately, after a Metadata request a disconnect fault dropped")
