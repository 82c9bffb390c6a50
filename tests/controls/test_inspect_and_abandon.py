"""group() and committed() as a stock client's group shows them; abandon() as a crash: the connections
drop, the lock is released and a new server on the directory recovers what was written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kcoord.client_cli.kafka_client import Connection, ToolError
from tests.controls.conftest import Served

pytestmark = pytest.mark.timeout(120)


def test_a_classic_groups_view_decodes_its_assignment(served: Served) -> None:
    served.call(lambda c: c.create_topic("g-topic", 2))
    consumer = KafkaConsumer(
        "g-topic", bootstrap_servers=served.bootstrap, group_id="viewed", client_id="viewer",
        auto_offset_reset="earliest", enable_auto_commit=False,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        view = None
        while time.monotonic() < deadline:
            # A poll shorter than a join round can lose kafka-python 3.0.12's join (its SyncGroup answer is
            # never consumed: tests/integration/FINDINGS.md, first entry), so poll as the suite's workers do.
            consumer.poll(2000)
            view = served.call(lambda c: c.group("viewed"))
            # The server's view turns Stable when it answers the SyncGroup; the client has joined only
            # once it has read that answer (its assignment), and a commit before that is refused.
            stable = view["state"] == "Stable" and view["members"] and view["members"][0]["assignment"]
            if stable and consumer.assignment():
                break
        assert view is not None and view["state"] == "Stable", view
        assert (view["protocol"], view["protocol_type"]) == ("classic", "consumer")
        assert view["generation"] >= 1 and view["protocol_name"]
        [member] = view["members"]
        assert view["leader"] == member["member_id"] and member["client_id"] == "viewer"
        assert member["client_host"].endswith("127.0.0.1") and member["group_instance_id"] is None
        assert member["assignment"] == {"g-topic": [0, 1]}
        consumer.commit({TopicPartition("g-topic", p): OffsetAndMetadata(3 + p, "m", -1) for p in (0, 1)})
        assert served.call(lambda c: c.committed("viewed")) == [
            {"topic": "g-topic", "partition": 0, "offset": 3, "metadata": "m"},
            {"topic": "g-topic", "partition": 1, "offset": 4, "metadata": "m"},
        ]
    finally:
        consumer.close()


def test_abandon_is_a_crash_the_next_server_recovers_from(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = Served(data_dir)
    first.call(lambda c: c.create_topic("kept", 1))
    producer = KafkaProducer(bootstrap_servers=first.bootstrap)
    producer.send("kept", b"written").get(10)
    producer.close(5)
    assert first.app.bound is not None
    conn = Connection("127.0.0.1", first.app.bound.port, 5)
    snapshots = sorted(p.name for p in data_dir.glob("*.snap"))
    first.close(abandon=True)
    assert sorted(p.name for p in data_dir.glob("*.snap")) == snapshots  # no snapshot at a crash
    with pytest.raises((ToolError, OSError)):
        conn.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
    conn.close()

    second = Served(data_dir)  # the lock was released: this would fail with "locked" otherwise
    try:
        assert [r["value"] for r in second.call(lambda c: c.records("kept"))] == [b"written"]
    finally:
        second.close()
    assert sorted(p.name for p in data_dir.glob("*.snap")) != snapshots  # a clean shutdown writes one


def test_a_consumer_protocol_groups_view(served: Served) -> None:
    from confluent_kafka import Consumer

    served.call(lambda c: c.create_topic("kip848", 3))
    consumer = Consumer(
        {"bootstrap.servers": served.bootstrap, "group.id": "new-protocol", "group.protocol": "consumer",
         "client.id": "rd-848"}
    )  # fmt: skip
    try:
        consumer.subscribe(["kip848"])
        deadline = time.monotonic() + 30
        view = None
        while time.monotonic() < deadline:
            consumer.poll(0.1)
            view = served.call(lambda c: c.group("new-protocol"))
            # The server's view turns Stable when it answers the SyncGroup; the client has joined only
            # once it has read that answer (its assignment), and a commit before that is refused.
            stable = view["state"] == "Stable" and view["members"] and view["members"][0]["assignment"]
            if stable and consumer.assignment():
                break
        assert view is not None and view["state"] == "Stable", view
        assert (view["protocol"], view["protocol_type"], view["leader"]) == ("consumer", "consumer", None)
        assert view["generation"] >= 1
        [member] = view["members"]
        assert member["client_id"] == "rd-848" and member["assignment"] == {"kip848": [0, 1, 2]}
    finally:
        consumer.close()
