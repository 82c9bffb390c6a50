"""advance(): a real member's session expires without waiting, a transaction times out, and what
fired is durable when the call returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from tests.controls.conftest import Served

pytestmark = pytest.mark.timeout(120)

T = TypeVar("T")
UNKNOWN_MEMBER_ID = 25


def _until(check: Callable[[], T | None], timeout: float, what: str, tick: Callable[[], Any]) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tick()
        found = check()
        if found:
            return found
    raise AssertionError(f"timed out waiting for {what}")


def _members(served: Served, group: str) -> list[str] | None:
    try:
        view = served.call(lambda c: c.group(group))
    except Exception:
        return None
    return [m["member_id"] for m in view["members"]] if view["state"] == "Stable" else None


def test_advance_expires_a_confluent_kafka_members_session(served: Served) -> None:
    served.call(lambda c: c.create_topic("clock", 1))
    consumer = Consumer(
        {
            "bootstrap.servers": served.bootstrap, "group.id": "sleepy", "session.timeout.ms": 30_000,
            "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
        }
    )  # fmt: skip
    try:
        consumer.subscribe(["clock"])
        tick = lambda: consumer.poll(0.1)  # noqa: E731
        first = _until(lambda: _members(served, "sleepy"), 30, "a Stable group", tick)
        assert len(first) == 1
        since = served.call(lambda c: c.requests())[-1]["seq"]

        moved = served.call(lambda c: c.advance(31))

        assert moved["advanced_ms"] == 31_000 and moved["fired"] >= 1
        # Expired, the only member left the group Empty; the offset retention check that advance() ran
        # then deleted it (no offsets): the group is gone, as in Kafka.
        assert _members(served, "sleepy") is None
        # The client learns it on its next heartbeat (UNKNOWN_MEMBER_ID) and joins again.
        _until(
            lambda: any(
                r["api"] == "Heartbeat" and UNKNOWN_MEMBER_ID in r["error_codes"]
                for r in served.call(lambda c: c.requests(since))
            ),
            10,
            "a heartbeat answered UNKNOWN_MEMBER_ID",
            tick,
        )
        again = _until(lambda: _members(served, "sleepy"), 30, "the member back in a Stable group", tick)
        assert len(again) == 1 and again != first
    finally:
        consumer.close()


def test_advance_times_out_an_open_transaction_durably(served: Served) -> None:
    served.call(lambda c: c.create_topic("payments", 1))
    producer = Producer(
        {
            "bootstrap.servers": served.bootstrap,
            "transactional.id": "slow-tx",
            "transaction.timeout.ms": 10_000,
        }
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("payments", b"pending")
    producer.flush(10)
    assert [r["aborted"] for r in served.call(lambda c: c.records("payments"))] == [False]

    served.call(lambda c: c.advance(11))

    # The abort's marker is written when advance() returns: the record reads as aborted at once.
    assert [(r["value"], r["aborted"]) for r in served.call(lambda c: c.records("payments"))] == [
        (b"pending", True)
    ]
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)  # fenced: the coordinator bumped the epoch when it aborted


def test_advance_rejects_bad_seconds(served: Served) -> None:
    from kcoord.wiring.controls import ControlError

    for bad in (-1, float("nan"), "5", True):
        with pytest.raises(ControlError) as refused:
            served.call(lambda c, bad=bad: c.advance(bad))  # type: ignore[misc]
        assert refused.value.status == 400
    before = served.call(lambda c: c.advance(0))["now_ms"]
    after = served.call(lambda c: c.advance(3600))["now_ms"]
    assert 3_599_998 <= after - before < 3_610_000  # loop time against wall time: within 1 ms
