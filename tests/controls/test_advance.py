"""advance(): a real member's session expires without waiting, a transaction times out, and what
fired is durable when the call returns; the periodic checks run only when their interval ends inside the
window, as on Kafka while that much time passed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
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


def _group(served: Served, group: str) -> dict[str, Any] | None:
    from kcoord.wiring.controls import ControlError

    try:
        view: dict[str, Any] = served.call(lambda c: c.group(group))
    except ControlError as exc:
        if exc.status == 404:
            return None
        raise
    return view


def _members(served: Served, group: str) -> list[str] | None:
    view = _group(served, group)
    return [m["member_id"] for m in view["members"]] if view and view["state"] == "Stable" else None


def test_advance_expires_a_confluent_kafka_members_session(served: Served) -> None:
    served.call(lambda c: c.create_topic("clock", 1))
    consumer = Consumer(
        {
            "bootstrap.servers": served.bootstrap, "group.id": "sleepy", "session.timeout.ms": 30_000,
            "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
        }
    )  # fmt: skip
    try:
        # A rebalance callback: librdkafka then rejoins only from poll(), so the Empty group is seen
        consumer.subscribe(["clock"], on_assign=lambda c, p: None)
        tick = lambda: consumer.poll(0.1)  # noqa: E731
        first = _until(lambda: _members(served, "sleepy"), 30, "a Stable group", tick)
        assert len(first) == 1 and served.call(lambda c: c.group("sleepy"))["generation"] == 1
        since = served.call(lambda c: c.requests())[-1]["seq"]

        moved = served.call(lambda c: c.advance(31))

        assert moved["advanced_ms"] == 31_000 and moved["fired"] >= 1
        # Expired, the only member leaves the group Empty at generation 2, as on Kafka; the group stays
        # until an offset retention check (every 10 minutes) finds it without offsets.
        empty = _group(served, "sleepy")
        assert empty is not None and (empty["state"], empty["generation"], empty["members"]) == (
            "Empty",
            2,
            [],
        )
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
        assert served.call(lambda c: c.group("sleepy"))["generation"] == 3
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

    # Timed out after 10 s, it is aborted by the first timed-out-transaction check after that; the checks
    # run every transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s), so 21 s hold one.
    served.call(lambda c: c.advance(21))

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


def _pause() -> None:
    time.sleep(0.01)  # between two looks at the server, in a bounded wait


def test_an_empty_group_waits_for_the_offset_retention_check(served: Served) -> None:
    """An Empty group without offsets is deleted by the offset retention check, which runs every
    offsets.retention.check.interval.ms (10 minutes): not by an advance() that ends short of it."""
    served.call(lambda c: c.create_topic("idle", 1))
    consumer = Consumer(
        {"bootstrap.servers": served.bootstrap, "group.id": "left", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe(["idle"])
        _until(lambda: _members(served, "left"), 30, "a Stable group", lambda: consumer.poll(0.1))
    finally:
        consumer.close()  # LeaveGroup: Empty, without offsets
    is_empty = lambda: (view := _group(served, "left")) is not None and view["state"] == "Empty"  # noqa: E731
    _until(is_empty, 10, "the group Empty", _pause)

    served.call(lambda c: c.advance(60))
    assert is_empty()  # the check is due 10 minutes after startup, not in this minute

    served.call(lambda c: c.advance(600))
    assert _group(served, "left") is None


@pytest.fixture
def slow_abort_checks(tmp_path: Path) -> Iterator[Served]:
    server = Served(
        tmp_path / "data", "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "60000"
    )
    try:
        yield server
    finally:
        server.close()


def test_a_timed_out_transaction_waits_for_the_abort_check(slow_abort_checks: Served) -> None:
    """A transaction past its timeout is aborted by the next timed-out-transaction check (here every
    60 s), as Kafka's TransactionCoordinator.abortTimedOutTransactions does: not by advance() itself."""
    served = slow_abort_checks
    served.call(lambda c: c.create_topic("late", 1))
    producer = Producer(
        {"bootstrap.servers": served.bootstrap, "transactional.id": "late-tx", "transaction.timeout.ms": 1000}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("late", b"pending")
    producer.flush(10)

    served.call(lambda c: c.advance(5))  # past its 1 s timeout, short of the check 60 s after startup
    assert [r["aborted"] for r in served.call(lambda c: c.records("late"))] == [False]

    served.call(lambda c: c.advance(60))
    assert [r["aborted"] for r in served.call(lambda c: c.records("late"))] == [True]


def test_log_retention_waits_for_its_check(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    """Segments past retention.ms are deleted by the log retention check (Kafka's LogManager
    "kafka-log-retention": 30 s after startup, then every log.retention.check.interval.ms), not by every
    advance()."""
    caplog.set_level(logging.INFO, logger="kcoord.partition_log")
    config = {"retention.ms": "1000", "segment.ms": "1000"}
    served.call(lambda c: c.create_topic("aging", 1, config))
    producer = Producer({"bootstrap.servers": served.bootstrap})
    producer.produce("aging", b"old")
    producer.flush(10)
    served.call(lambda c: c.advance(2))
    producer.produce("aging", b"new")  # the segment of "old" is 2 s old: "new" rolls a new one
    producer.flush(10)
    retained = lambda: [r["value"] for r in served.call(lambda c: c.records("aging"))]  # noqa: E731
    checked = lambda: "retention: topic=aging" in caplog.text  # noqa: E731

    served.call(lambda c: c.advance(2))  # "old" is past retention.ms; the first check is 30 s in
    assert not checked() and retained() == [b"old", b"new"]

    served.call(lambda c: c.advance(30))
    assert checked()
    _until(lambda: retained() == [b"new"], 10, "the old segment deleted", _pause)
