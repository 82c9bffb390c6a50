"""Faults as clients see them: errors in each API's shape (per partition where the answer is), delays,
disconnects, filters, fired() and the request log."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.structs import OffsetAndMetadata

from kcoord.client_cli.kafka_client import Connection, ToolError
from kcoord.wiring.controls import ControlError
from tests.controls.conftest import Served

pytestmark = pytest.mark.timeout(120)

NOT_COORDINATOR, NOT_LEADER = 16, 6


def _batch(value: bytes) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, 1_700_000_000_000, None, value, [])
    return bytes(builder.build())


def _connect(served: Served) -> Connection:
    assert served.app.bound is not None
    return Connection("127.0.0.1", served.app.bound.port, 10)


def test_a_kafka_python_consumer_retries_not_coordinator_on_commit(served: Served) -> None:
    served.call(lambda c: c.create_topic("orders", 1))
    consumer = KafkaConsumer(
        bootstrap_servers=served.bootstrap, group_id="retrying", enable_auto_commit=False
    )
    try:
        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(1, "", -1)})  # the coordinator is known
        fault = served.call(lambda c: c.fail("OffsetCommit", "NOT_COORDINATOR", count=2, group="retrying"))
        assert fault["kind"] == "error" and fault["error_code"] == NOT_COORDINATOR and fault["remaining"] == 2
        since = served.call(lambda c: c.requests())[-1]["seq"]

        consumer.commit({tp: OffsetAndMetadata(5, "", -1)})  # kafka-python rediscovers and retries

        assert served.call(lambda c: c.committed("retrying"))[0]["offset"] == 5
        [fired] = served.call(lambda c: c.fired())
        assert fired["id"] == fault["id"] and fired["fired"] == 2 and fired["remaining"] == 0
        assert served.call(lambda c: c.faults()) == []
        log = served.call(lambda c: c.requests(since))
        commits = [r for r in log if r["api"] == "OffsetCommit"]
        assert [(r["error_codes"], r["fault"]) for r in commits] == [
            ([NOT_COORDINATOR], fault["id"]),
            ([NOT_COORDINATOR], fault["id"]),
            ([], None),
        ]
        assert any(r["api"] == "FindCoordinator" for r in log)
        assert all(
            r["client_id"].startswith("kafka-python") and r["peer"].startswith("127.0.0.1:") for r in log
        )
    finally:
        consumer.close()


def test_an_error_for_one_partition_leaves_the_rest_of_the_produce_served(served: Served) -> None:
    served.call(lambda c: c.create_topic("split", 2))
    served.call(lambda c: c.fail("Produce", "NOT_LEADER_OR_FOLLOWER", topic="split", partition=1))
    conn = _connect(served)
    try:
        body = {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": "split", "partition_data": [
                {"index": 0, "records": _batch(b"kept")}, {"index": 1, "records": _batch(b"refused")}]}],
        }  # fmt: skip
        answer = conn.request(0, body, version=9)
        errors = {p["index"]: p["error_code"] for t in answer["responses"] for p in t["partition_responses"]}
        assert errors == {0: 0, 1: NOT_LEADER}
        assert [(r["partition"], r["value"]) for r in served.call(lambda c: c.records("split"))] == [
            (0, b"kept")
        ]
        # count=1: the next produce to partition 1 is served
        body["topic_data"][0]["partition_data"] = [{"index": 1, "records": _batch(b"later")}]  # type: ignore[index]
        assert conn.request(0, body, version=9)["responses"][0]["partition_responses"][0]["error_code"] == 0
    finally:
        conn.close()


def test_a_fault_for_another_topic_or_group_does_not_fire(served: Served) -> None:
    served.call(lambda c: c.create_topic("mine", 1))
    served.call(lambda c: c.fail("Produce", "NOT_LEADER_OR_FOLLOWER", topic="theirs"))
    served.call(lambda c: c.fail("Heartbeat", "NOT_COORDINATOR", group="theirs"))
    producer = KafkaProducer(bootstrap_servers=served.bootstrap)
    try:
        producer.send("mine", b"v").get(10)
    finally:
        producer.close(5)
    assert served.call(lambda c: c.fired()) == []
    assert [f["remaining"] for f in served.call(lambda c: c.faults())] == [1, 1]
    assert served.call(lambda c: c.clear_faults()) == {} and served.call(lambda c: c.faults()) == []


def test_a_delay_holds_the_answer(served: Served) -> None:
    conn = _connect(served)
    try:
        fault = served.call(lambda c: c.delay("Metadata", 300))
        assert fault["kind"] == "delay" and fault["ms"] == 300 and fault["error"] is None
        started = time.monotonic()
        conn.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
        assert time.monotonic() - started >= 0.3
        started = time.monotonic()
        conn.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
        assert time.monotonic() - started < 0.3  # count=1: used up
        entries = [r for r in served.call(lambda c: c.requests()) if r["api"] == "Metadata"]
        assert entries[-2]["fault"] == fault["id"] and entries[-2]["duration_ms"] >= 300
        assert entries[-1]["fault"] is None
    finally:
        conn.close()


def test_a_disconnect_closes_the_connection_and_a_producer_recovers(served: Served) -> None:
    served.call(lambda c: c.create_topic("flaky", 1))
    conn = _connect(served)
    served.call(lambda c: c.disconnect("Metadata"))
    with pytest.raises((ToolError, OSError)):
        conn.request(3, {"topics": None, "allow_auto_topic_creation": False}, version=9)
    conn.close()
    producer = KafkaProducer(bootstrap_servers=served.bootstrap, retries=5)
    try:
        producer.send("flaky", b"warmup").get(10)
        served.call(lambda c: c.disconnect("Produce"))
        producer.send("flaky", b"after").get(20)  # the request was never served: resent, written once
    finally:
        producer.close(5)
    assert [r["value"] for r in served.call(lambda c: c.records("flaky"))] == [b"warmup", b"after"]
    assert [f["kind"] for f in served.call(lambda c: c.fired())] == ["disconnect", "disconnect"]


def test_bad_fault_arguments_are_400s(served: Served) -> None:
    for call in (
        lambda c: c.fail("NoSuchApi", 16),
        lambda c: c.fail("Heartbeat", "NO_SUCH_ERROR"),
        lambda c: c.fail("Heartbeat", 0),
        lambda c: c.fail("Heartbeat", 16, count=0),
        lambda c: c.delay("Fetch", -5),
        lambda c: c.disconnect(999),
    ):
        with pytest.raises(ControlError) as refused:
            served.call(call)
        assert refused.value.status == 400
    by_key = served.call(lambda c: c.fail(12, 16))
    by_name = served.call(lambda c: c.fail("heartbeat", "not_coordinator"))
    assert by_key["api"] == by_name["api"] == "Heartbeat" and by_key["error"] == by_name["error"]


def test_a_fetch_error_on_one_partition_is_retried_by_a_kafka_python_consumer(served: Served) -> None:
    served.call(lambda c: c.create_topic("two", 2))
    producer = KafkaProducer(bootstrap_servers=served.bootstrap)
    for partition in (0, 1):
        producer.send("two", b"p%d" % partition, partition=partition).get(10)
    producer.close(5)
    fault = served.call(lambda c: c.fail("Fetch", "NOT_LEADER_OR_FOLLOWER", topic="two", partition=0))
    consumer = KafkaConsumer(
        bootstrap_servers=served.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=15_000
    )
    try:
        consumer.assign([TopicPartition("two", 0), TopicPartition("two", 1)])
        assert sorted(next(consumer).value for _ in range(2)) == [b"p0", b"p1"]
    finally:
        consumer.close()
    [fetch] = [r for r in served.call(lambda c: c.requests()) if r["fault"] == fault["id"]]
    assert fetch["api"] == "Fetch" and fetch["error_codes"] == [NOT_LEADER]
