"""KcoordContainer under podman's Docker-compatible API: a stock client (kafka-python) from the host and
from a second container, reset, a fault and the clock through the container's HTTP test controls.

Host networking here (the bridge's address range must not be used on these machines): both listeners
then bind loopback ports, and the second container shares the host's network. The bridge-network
configuration (published port, network alias) is checked as the container would be created.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from tests.container.helpers import FIGURES, wait_healthy

pytestmark = pytest.mark.timeout(300)

CLIENT_SCRIPT = (Path(__file__).parent / "in_container_client.py").read_text()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kcoord_container(docker_host: str, kcoord_image: str) -> Iterator[object]:
    from kcoord.testing.containers import KcoordContainer

    started = time.monotonic()
    with KcoordContainer(kcoord_image).with_host_network() as container:
        FIGURES["KcoordContainer start() to ready, s"] = time.monotonic() - started
        yield container


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for value in values:
            producer.send(topic, value=value).get(timeout=30)
    finally:
        producer.close()


def _consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=2000).values():
                seen.extend(record.value for record in records)
        return seen
    finally:
        consumer.close()


def test_host_client_produces_and_consumes_through_the_advertised_address(kcoord_container) -> None:
    bootstrap = kcoord_container.get_bootstrap_server()
    topic = _name("orders")
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    producer.send(topic, key=b"k", value=b"first").get(timeout=30)
    # Every later connection goes to what Metadata advertised: the EXTERNAL listener's address.
    assert [f"{b.host}:{b.port}" for b in producer._metadata.brokers()] == [bootstrap]
    producer.close()
    assert bootstrap != kcoord_container.get_internal_bootstrap_server()  # two listeners, one per audience
    assert _consume_all(bootstrap, topic, 1) == [b"first"]
    # The image's HEALTHCHECK (`kcoord health`) is pointed at the listener's loopback port too.
    wait_healthy(kcoord_container.get_wrapped_container().name, timeout=30)


def test_client_in_a_second_container_uses_the_internal_listener(kcoord_container, client_image: str) -> None:
    from testcontainers.core.container import DockerContainer

    internal = kcoord_container.get_internal_bootstrap_server()
    topic, group = _name("events"), _name("readers")
    argv = ["-c", CLIENT_SCRIPT, internal, topic, group, "5"]
    with DockerContainer(client_image, command=argv, network_mode="host") as client:
        status = client.get_wrapped_container().wait(timeout=120)
        out, err = client.get_logs()
    assert status["StatusCode"] == 0, (out + err).decode(errors="replace")[-3000:]
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer == {"brokers": [internal], "values": [f"v{i}" for i in range(5)]}
    # The host sees the same records and the group's commit through its own listener.
    assert _consume_all(kcoord_container.get_bootstrap_server(), topic, 5) == [b"v%d" % i for i in range(5)]
    admin = KafkaAdminClient(bootstrap_servers=kcoord_container.get_bootstrap_server())
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {0: 5}


def test_reset_through_the_container_empties_it_and_keeps_the_client(kcoord_container) -> None:
    bootstrap = kcoord_container.get_bootstrap_server()
    topic, group = _name("orders"), _name("billing")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
        producer.send(topic, partition=1, value=b"before").get(timeout=30)
        _commit(bootstrap, group, TopicPartition(topic, 1), 1)
        assert [r.value for r in kcoord_container.records(topic)] == [b"before"]
        assert kcoord_container.committed(group) == {(topic, 1): 1}

        took_ms = kcoord_container.reset()

        assert 0 <= took_ms < 5000
        assert topic not in admin.list_topics()
        assert kcoord_container.committed(group) == {}
        # The name is free again, and the producer's open connection survived the reset.
        kcoord_container.create_topic(topic, partitions=2)
        producer.send(topic, partition=1, value=b"after").get(timeout=30)
        assert [(r.partition, r.offset, r.value) for r in kcoord_container.records(topic)] == [
            (1, 0, b"after")
        ]
    finally:
        producer.close()
        admin.close()


def test_fault_through_the_container_is_seen_by_a_stock_client(kcoord_container) -> None:
    bootstrap = kcoord_container.get_bootstrap_server()
    topic, group = _name("orders"), _name("billing")
    _produce(bootstrap, topic, [b"x"])
    fault = kcoord_container.fail("OffsetCommit", "NOT_COORDINATOR", count=1, group=group)
    assert (fault.kind, fault.api, fault.error, fault.remaining) == (
        "error",
        "OffsetCommit",
        "NOT_COORDINATOR",
        1,
    )

    _commit(bootstrap, group, TopicPartition(topic, 0), 1)  # kafka-python rediscovers and retries

    [fired] = kcoord_container.fired()
    assert (fired.id, fired.fired, fired.remaining) == (fault.id, 1, 0)
    assert kcoord_container.committed(group) == {(topic, 0): 1}
    commits = [entry for entry in kcoord_container.requests() if entry.api == "OffsetCommit"]
    assert [entry.fault for entry in commits] == [fault.id, None]
    assert commits[0].error_codes == [16]  # NOT_COORDINATOR, in the response the client got


def _commit(bootstrap: str, group: str, partition: TopicPartition, offset: int) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([partition])
        consumer.commit({partition: OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


def test_advance_through_the_container_expires_a_stock_consumers_session(kcoord_container) -> None:
    bootstrap = kcoord_container.get_bootstrap_server()
    topic, group = _name("events"), _name("sleepy")
    kcoord_container.create_topic(topic)
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000)
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=2000)
        [member] = kcoord_container.wait_stable(group, timeout=10).members
        assert member.assignment == {topic: [0]}

        moved = kcoord_container.advance(60)  # the 6 s session is over now, without waiting for it

        assert moved["advanced_ms"] == 60_000 and moved["fired"] >= 1
        found = kcoord_container.group(group)  # None: Empty without offsets, deleted by advance()'s cleanup
        remaining = [] if found is None else [m.member_id for m in found.members]
        assert member.member_id not in remaining
    finally:
        consumer.close()
