"""reset(): topics, records, groups, offsets and transactions gone in milliseconds; the clients'
connections stay open and keep working (a raw connection and stock clients)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Producer as RdProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kcoord.client_cli.kafka_client import Connection
from kcoord.wiring.controls import ControlError
from tests.controls.conftest import Served

pytestmark = pytest.mark.timeout(120)


def _commit(conn: Connection, group: str, topic: str, offset: int) -> int:
    """A simple group's OffsetCommit (generation -1); the partition's error code."""
    answer = conn.request(
        8,
        {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                 "commit_timestamp": -1, "committed_metadata": "m"}]}],
        },
        version=8,
    )  # fmt: skip
    return int(answer["topics"][0]["partitions"][0]["error_code"])


def _metadata_topics(conn: Connection) -> list[str]:
    answer = conn.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
    return sorted(t["name"] for t in answer["topics"])


def test_reset_forgets_everything_and_keeps_the_connection(served: Served) -> None:
    assert served.call(lambda c: c.create_topic("orders", 2)) == {"name": "orders", "partitions": 2}
    with pytest.raises(ControlError) as exists:
        served.call(lambda c: c.create_topic("orders", 2))
    assert exists.value.status == 409
    conn = Connection("127.0.0.1", served.app.bound.port, 10)  # type: ignore[union-attr]
    try:
        assert _commit(conn, "g1", "orders", 1) == 0
        producer = KafkaProducer(bootstrap_servers=served.bootstrap)
        producer.send("orders", b"one", partition=0).get(10)
        tx = RdProducer({"bootstrap.servers": served.bootstrap, "transactional.id": "tx-1"})
        tx.init_transactions(10)
        tx.begin_transaction()
        tx.produce("orders", b"in-txn", partition=1)
        tx.flush(10)
        tx.abort_transaction(10)
        del tx
        assert served.call(lambda c: c.committed("g1")) == [
            {"topic": "orders", "partition": 0, "offset": 1, "metadata": "m"}
        ]
        # abort_transaction() returns once PrepareAbort is durable (as Kafka's EndTxn answers); the
        # ABORT marker follows, and only then does the record read as aborted.
        deadline = time.monotonic() + 10
        while True:
            records = served.call(lambda c: c.records("orders"))
            seen = [(r["value"], r["aborted"]) for r in records]
            if seen == [(b"one", False), (b"in-txn", True)] or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert seen == [(b"one", False), (b"in-txn", True)]
        assert served.app.state is not None and served.app.state.transactions.transactions()
        served.call(lambda c: c.fail("Metadata", "UNKNOWN_SERVER_ERROR", 5))
        served.call(lambda c: c.configure(group_initial_rebalance_delay_ms=3000))

        result = served.call(lambda c: c.reset())

        assert 0 < result["reset_ms"] < 2000
        assert served.call(lambda c: c.faults()) == [] and served.call(lambda c: c.fired()) == []
        assert served.call(lambda c: c.configure())["group_initial_rebalance_delay_ms"] == 0
        assert _metadata_topics(conn) == []  # the same socket, answered by the fresh state
        assert served.call(lambda c: c.committed("g1")) == []
        with pytest.raises(ControlError) as gone:
            served.call(lambda c: c.group("g1"))
        assert gone.value.status == 404
        with pytest.raises(ControlError):
            served.call(lambda c: c.records("orders"))
        assert served.app.state.transactions.transactions() == []
        requests = served.call(lambda c: c.requests())
        assert [r["api"] for r in requests] == ["Metadata"]  # the log starts again at the reset

        # The clients carry on over their open connections.
        served.call(lambda c: c.create_topic("orders", 2))
        assert _commit(conn, "g1", "orders", 7) == 0
        producer.send("orders", b"two", partition=0).get(10)
        assert [r["value"] for r in served.call(lambda c: c.records("orders"))] == [b"two"]
        peers = {r["peer"] for r in served.call(lambda c: c.requests()) if r["api"] == "Produce"}
        assert len(peers) == 1 and len(served.app.connections) >= 2
        producer.close(5)
    finally:
        conn.close()


def test_a_consumer_keeps_working_across_a_reset(served: Served) -> None:
    served.call(lambda c: c.create_topic("events", 1))
    producer = KafkaProducer(bootstrap_servers=served.bootstrap)
    consumer = KafkaConsumer(
        bootstrap_servers=served.bootstrap, group_id="readers", auto_offset_reset="earliest",
        enable_auto_commit=False, consumer_timeout_ms=10_000,
    )  # fmt: skip
    try:
        consumer.assign([TopicPartition("events", 0)])
        producer.send("events", b"before").get(10)
        assert next(consumer).value == b"before"
        consumer.commit()
        served.call(lambda c: c.reset())
        served.call(lambda c: c.create_topic("events", 1))
        producer.send("events", b"after").get(10)
        consumer.seek(TopicPartition("events", 0), 0)
        assert next(consumer).value == b"after"
        consumer.commit()
        assert served.call(lambda c: c.committed("readers")) == [
            {"topic": "events", "partition": 0, "offset": 1, "metadata": ""}
        ]
    finally:
        consumer.close()
        producer.close(5)


def test_reset_with_100_topics_and_100_groups_takes_milliseconds(served: Served) -> None:
    conn = Connection("127.0.0.1", served.app.bound.port, 10)  # type: ignore[union-attr]
    producer = KafkaProducer(bootstrap_servers=served.bootstrap, linger_ms=5)
    try:
        timings: list[float] = []
        for _ in range(3):
            for i in range(100):
                served.call(lambda c, i=i: c.create_topic(f"topic-{i}", 1))  # type: ignore[misc]
            futures = [producer.send(f"topic-{i}", b"x") for i in range(100)]
            for future in futures:
                future.get(10)
            assert all(_commit(conn, f"group-{i}", f"topic-{i}", 1) == 0 for i in range(100))
            started = time.perf_counter()
            reported: dict[str, Any] = served.call(lambda c: c.reset())
            timings.append((time.perf_counter() - started) * 1000)
            assert _metadata_topics(conn) == []
            took = f"{reported['reset_ms']:.1f} ms (call {timings[-1]:.1f} ms)"
            print(f"reset with 100 topics and 100 groups: {took}")
        assert min(timings) < 100, timings  # about 6 ms here
    finally:
        producer.close(5)
        conn.close()


def test_a_parked_long_poll_fetch_is_answered_and_the_socket_pipelines_across_a_reset(served: Served) -> None:
    from kcoord.protocol.frames import decode_response
    from tests.server.wire import connect, read_frame, send

    served.call(lambda c: c.create_topic("quiet", 1))
    assert served.app.bound is not None
    sock = connect(("127.0.0.1", served.app.bound.port))
    try:
        fetch = {
            "max_wait_ms": 20_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "quiet", "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": "",
        }  # fmt: skip
        send(sock, 1, 12, 1, fetch)  # parked: nothing to read for 20 s
        metadata = {"topics": None, "allow_auto_topic_creation": False}
        send(sock, 3, 9, 2, metadata)  # behind it on the same socket (answered in order)
        started = time.monotonic()
        result = served.call(lambda c: c.reset())
        assert result["reset_ms"] < 2000 and time.monotonic() - started < 5
        correlation, answer = decode_response(1, 12, read_frame(sock))
        assert correlation == 1 and answer["responses"][0]["partitions"][0]["records"] in (None, b"")
        correlation, answer = decode_response(3, 9, read_frame(sock))
        assert correlation == 2
        send(sock, 3, 9, 3, metadata)  # the socket is still served, by the fresh state
        correlation, answer = decode_response(3, 9, read_frame(sock))
        assert correlation == 3 and answer["topics"] == []
    finally:
        sock.close()


def test_reset_drops_runtime_acls_and_keeps_the_authorizer(tmp_path: Any) -> None:
    served = Served(tmp_path / "data", "--authorizer", "standard", "--super-users", "User:ANONYMOUS")
    conn = Connection("127.0.0.1", served.app.bound.port, 10)  # type: ignore[union-attr]
    describe = {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1,
    }  # fmt: skip
    try:
        created = conn.request(
            30,
            {"creations": [{"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 3,
                            "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]},
            version=1,
        )  # fmt: skip
        assert [r["error_code"] for r in created["results"]] == [0]
        assert len(conn.request(29, describe, version=1)["resources"]) == 1
        served.call(lambda c: c.reset())
        assert served.app.ctx is not None and served.app.ctx.authorizer is not None
        assert conn.request(29, describe, version=1)["resources"] == []
    finally:
        conn.close()
        served.close()


def test_producer_ids_after_a_reset_are_new_ones(served: Served) -> None:
    """A producer kept across a reset still sends with its old id: a new producer must never get it."""
    conn = Connection("127.0.0.1", served.app.bound.port, 10)  # type: ignore[union-attr]
    try:
        request = {"transactional_id": None, "transaction_timeout_ms": 60000}
        before = conn.request(22, request, version=4)["producer_id"]
        served.call(lambda c: c.reset())
        after = conn.request(22, request, version=4)["producer_id"]
    finally:
        conn.close()
    assert after > before
