"""Transactions seen over HTTP with a real transactional producer (confluent-kafka, its own process): the
inspector (/v1/transactions), the metrics, and the abort / expire test controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.conftest import Http, sample
from tests.integration.conftest import create_topic, unique, wait_until
from tests.integration.test_transactions import Txns, end_offsets
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def txns(server: KcoordServer, tmp_path: Path) -> Iterator[Txns]:
    factory = Txns(server, tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()


def _txn(http: Http, transactional_id: str) -> dict[str, Any] | None:
    status, body = http.call("GET", f"/v1/transactions/{transactional_id}")
    assert status in (200, 404), (status, body)
    return body if status == 200 else None


def _listed(http: Http, query: str = "") -> dict[str, dict[str, Any]]:
    return {t["transactional_id"]: t for t in http.get(f"/v1/transactions{query}")["transactions"]}


def _lso_lag(m: dict[Any, float], topic: str, partition: int) -> float | None:
    key = ("kcoord_partition_lso_lag_offsets", (("partition", str(partition)), ("topic", topic)))
    return m.get(key)


def test_an_open_then_committed_then_aborted_transaction_in_the_inspector_and_the_metrics(
    server: KcoordServer, http: Http, txns: Txns
) -> None:
    topic, tid = unique("txn"), unique("tid")
    create_topic(server.bootstrap, topic, 2)
    producer = txns.producer("confluent-kafka", tid, transaction_timeout_ms=30_000)
    producer.ok("init")
    idle = _txn(http, tid)
    assert idle is not None and (idle["state"], idle["partitions"], idle["age_ms"]) == ("Empty", {}, None)
    assert idle["transaction_timeout_ms"] == 30_000 and idle["producer_epoch"] == 0

    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["a", "b", "c"])
    view = _txn(http, tid)
    assert view is not None and view["state"] == "Ongoing" and view["pending_state"] is None
    assert view["producer_id"] == idle["producer_id"] and view["partitions"] == {topic: [0]}
    assert view["transaction_start_time_ms"] is not None and 0 <= view["age_ms"] < 30_000
    assert view["partition_logs"] == [
        {"topic": topic, "partition": 0, "high_watermark": 3, "last_stable_offset": 0, "lso_lag": 3,
         "txn_start_offset": 0}
    ]  # fmt: skip
    assert _listed(http)[tid]["state"] == "Ongoing" and "partition_logs" not in _listed(http)[tid]
    assert tid in _listed(http, "?state=Ongoing&state=PrepareCommit") and tid not in _listed(
        http, "?state=Empty"
    )
    assert http.call("GET", "/v1/transactions?state=Dead")[0] == 400
    m = http.metrics()
    assert sample(m, "kcoord_transactions_open") == 1
    assert sample(m, "kcoord_transactional_ids", state="Ongoing") == 1
    assert 0 < sample(m, "kcoord_transaction_oldest_open_age_seconds") < 30
    assert _lso_lag(m, topic, 0) == 3 and _lso_lag(m, topic, 1) is None  # no transaction touched 1

    producer.ok("commit")
    done = wait_until(
        lambda: (
            (m := http.metrics())
            and sample(m, "kcoord_transactions_completed_total", result="commit") == 1
            and m
        ),
        10,
        "the commit to complete",
    )
    assert sample(done, "kcoord_transactions_open") == 0
    assert sample(done, "kcoord_transaction_oldest_open_age_seconds") == 0
    assert _lso_lag(done, topic, 0) == 0  # still shown: the partition holds a transactional producer
    committed = _txn(http, tid)
    assert committed is not None and committed["state"] == "CompleteCommit" and committed["age_ms"] is None

    producer.ok("begin")
    producer.ok("send", topic=topic, partition=1, values=["x"])
    assert _lso_lag(http.metrics(), topic, 1) == 1
    producer.ok("abort")
    wait_until(
        lambda: sample(http.metrics(), "kcoord_transactions_completed_total", result="abort") == 1,
        10,
        "the abort to complete",
    )
    m = http.metrics()
    assert _lso_lag(m, topic, 1) == 0 and sample(m, "kcoord_transactional_ids", state="CompleteAbort") == 1
    producer.close()


def test_aborting_an_open_transaction_fences_its_producer_and_hides_its_records(
    server: KcoordServer, http: Http, txns: Txns
) -> None:
    topic, tid = unique("abort"), unique("tid")
    create_topic(server.bootstrap, topic, 1)
    producer = txns.producer("confluent-kafka", tid)
    producer.ok("init")
    assert http.call("POST", f"/v1/test/transactions/{tid}/abort")[0] == 409  # Empty: nothing to abort
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["doomed1", "doomed2"])
    before = _txn(http, tid)
    assert before is not None

    aborted = http.post(f"/v1/test/transactions/{tid}/abort")
    assert aborted["state"] in ("PrepareAbort", "CompleteAbort")  # answered once the abort is decided
    assert aborted["producer_epoch"] == before["producer_epoch"] + 1  # the producer is fenced
    wait_until(lambda: (v := _txn(http, tid)) and v["state"] == "CompleteAbort", 10, "the abort markers")
    status, body = http.call("POST", f"/v1/test/transactions/{tid}/abort")
    assert status == 409 and body["error"].startswith("INVALID_TXN_STATE")
    assert http.call("POST", "/v1/test/transactions/no-such-id/abort")[0] == 404

    answer = producer.call("commit")
    assert answer["event"] == "failed", f"the fenced producer committed: {answer}"
    ends = end_offsets(server.bootstrap, topic, 1)
    assert ends == {0: 3}  # two records and the ABORT marker
    records, reached = txns.read("confluent-kafka", topic, ends)
    assert reached and records == []
    assert sample(http.metrics(), "kcoord_transactions_completed_total", result="abort") == 1


def test_expiring_an_idle_transactional_id_removes_it(server: KcoordServer, http: Http, txns: Txns) -> None:
    topic, tid = unique("expire"), unique("tid")
    create_topic(server.bootstrap, topic, 1)
    producer = txns.producer("confluent-kafka", tid)
    producer.ok("init")
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["v"])
    status, body = http.call("POST", f"/v1/test/transactions/{tid}/expire")
    assert status == 409 and "Ongoing" in body["error"]  # an open transaction is never expired
    producer.ok("commit")
    wait_until(lambda: (v := _txn(http, tid)) and v["state"] == "CompleteCommit", 10, "the commit")

    assert http.post(f"/v1/test/transactions/{tid}/expire") == {"transactional_id": tid, "expired": True}
    assert _txn(http, tid) is None and tid not in _listed(http)
    assert http.call("POST", f"/v1/test/transactions/{tid}/expire")[0] == 404
    assert sample(http.metrics(), "kcoord_transactional_ids", state="CompleteCommit") == 0
    producer.close()


@pytest.mark.no_test_controls
def test_transaction_controls_are_off_without_the_flag(http: Http) -> None:
    assert http.get("/v1/transactions") == {"transactions": []}
    assert http.call("GET", "/v1/transactions/none")[0] == 404
    assert http.call("POST", "/v1/test/transactions/none/abort")[0] == 403
    assert http.call("POST", "/v1/test/transactions/none/expire")[0] == 403
