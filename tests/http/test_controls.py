"""Test controls with real consumers in separate processes: forced rebalance, expiry, injected errors."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from tests.http.conftest import Http, sample
from tests.integration.conftest import Workers, unique, wait_for_split, wait_until
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

DEFAULT_SESSION_TIMEOUT_MS = 45_000  # the clients' default: rejoining in time cannot be an expiry
LONG_SESSION = {"session_timeout_ms": DEFAULT_SESSION_TIMEOUT_MS, "max_poll_interval_ms": 60_000}


def _assigned_events(worker: Any) -> list[dict[str, Any]]:
    return [e for e in worker.events if e["event"] == "assigned"]


def _stable(http: Http, group: str, members: int) -> dict[str, Any] | None:
    view = http.group(group)
    if view is None or view["state"] != "Stable" or len(view["members"]) != members:
        return None
    return view


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_forced_rebalance_makes_consumers_rejoin_within_a_second(
    client: str, http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    group = unique(f"force-{client}")
    members = [workers.spawn(client, group, [topic], **LONG_SESSION) for _ in range(2)]
    wait_for_split(members, topic_partitions)
    before = wait_until(lambda: _stable(http, group, 2), 30, "a Stable group of two")
    started = time.monotonic()
    forced = http.post(f"/v1/test/groups/{group}/rebalance")
    assert forced["state"] == "PreparingRebalance"
    after = wait_until(
        lambda: (v := _stable(http, group, 2)) and v["generation_id"] > before["generation_id"] and v,
        5,
        "the rebalanced group",
        interval=0.02,
    )
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"the consumers took {elapsed:.2f}s to rejoin"
    # The same members rejoined (nobody was expired and replaced).
    assert {m["member_id"] for m in after["members"]} == {m["member_id"] for m in before["members"]}
    assert sample(http.metrics(), "kcoord_rebalances_total", reason="test_control") == 1
    wait_for_split(members, topic_partitions)


def test_injected_not_coordinator_makes_librdkafka_rediscover_and_recover(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    group = unique("notcoord")
    consumer = workers.spawn("confluent-kafka", group, [topic], **LONG_SESSION)
    wait_for_split([consumer], topic_partitions)
    wait_until(lambda: _stable(http, group, 1), 30, "a Stable group")
    finds_before = sample(http.metrics(), "kcoord_requests_total", api="FindCoordinator", version="2")
    fault = http.post(
        "/v1/test/errors", {"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": 2, "group_id": group}
    )
    assert fault["error_code"] == 16 and fault["remaining"] == 2
    wait_until(lambda: http.get("/v1/test/errors")["errors"] == [], 20, "both injected errors to be answered")
    m = http.metrics()
    assert sample(m, "kcoord_errors_total", api="Heartbeat", error="NOT_COORDINATOR") == 2
    # librdkafka marks the coordinator dead on NOT_COORDINATOR and looks it up again.
    wait_until(
        lambda: (
            sample(http.metrics(), "kcoord_requests_total", api="FindCoordinator", version="2") > finds_before
        ),
        10,
        "a FindCoordinator after the injected error",
    )
    # ... and recovers: it commits through the rediscovered coordinator and stays in the group.
    partition = sorted(consumer.assignment)[0]
    consumer.commit([(partition[0], partition[1], 0, "")])
    assert _stable(http, group, 1) is not None


def test_an_injected_error_can_target_one_group(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    target, other = unique("target"), unique("other")
    consumers = {g: workers.spawn("confluent-kafka", g, [topic]) for g in (target, other)}
    for c in consumers.values():
        wait_for_split([c], topic_partitions)
    http.post(
        "/v1/test/errors", {"api": 12, "error": 27, "count": 1, "group_id": target}
    )  # REBALANCE_IN_PROGRESS
    wait_until(lambda: http.get("/v1/test/errors")["errors"] == [], 20, "the injected error to be answered")
    m = http.metrics()
    assert sample(m, "kcoord_errors_total", api="Heartbeat", error="REBALANCE_IN_PROGRESS") >= 1
    wait_until(lambda: _stable(http, target, 1), 20, "the target group to settle again")
    assert http.group(other)["generation_id"] == 1  # the other group never saw the error


def test_expired_member_consumer_rejoins(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    group = unique("expire")
    consumer = workers.spawn("confluent-kafka", group, [topic], **LONG_SESSION)
    wait_for_split([consumer], topic_partitions)
    before = wait_until(lambda: _stable(http, group, 1), 30, "a Stable group")
    expired_id = before["members"][0]["member_id"]
    view = http.post(f"/v1/test/groups/{group}/members/{expired_id}/expire")
    assert view["members"] == [] and view["state"] in ("Empty", "PreparingRebalance")
    after = wait_until(
        lambda: (v := _stable(http, group, 1)) and v["members"][0]["member_id"] != expired_id and v,
        15,
        "the consumer to rejoin with a new member id",
    )
    assert after["generation_id"] > before["generation_id"]
    assert sample(http.metrics(), "kcoord_rebalances_total", reason="test_control") == 1
    wait_for_split([consumer], topic_partitions)


def test_added_latency_delays_an_api(http: Http, server: KcoordServer, workers: Workers, topic: str) -> None:
    http.post("/v1/test/latency", {"api": "FindCoordinator", "ms": 300})
    group = unique("slow")
    workers.spawn("confluent-kafka", group, [topic])
    wait_until(lambda: _stable(http, group, 1), 30, "a Stable group")
    m = http.metrics()
    slow = sum(
        v
        for (n, labels), v in m.items()
        if n == "kcoord_request_latency_seconds_sum" and ("api", "FindCoordinator") in labels
    )
    count = sum(
        v
        for (n, labels), v in m.items()
        if n == "kcoord_request_latency_seconds_count" and ("api", "FindCoordinator") in labels
    )
    assert count >= 1 and slow / count >= 0.25  # 300 ms each, timed from after the decode
    assert http.call("POST", "/v1/test/latency", {"api": "FindCoordinator", "ms": 0})[1] == {"latency_ms": {}}


def test_runtime_settings_change_and_are_validated(http: Http) -> None:
    assert http.get("/v1/test/config")["group_min_session_timeout_ms"] == 1000
    changed = http.post(
        "/v1/test/config", {"group_initial_rebalance_delay_ms": 50, "group_max_session_timeout_ms": 10000}
    )
    assert changed == {
        "group_initial_rebalance_delay_ms": 50,
        "group_min_session_timeout_ms": 1000,
        "group_max_session_timeout_ms": 10000,
    }
    for bad in (
        {"group_min_session_timeout_ms": 20000},
        {"offsets_retention_ms": 1},
        {"group_initial_rebalance_delay_ms": -1},
    ):
        status, _ = http.call("POST", "/v1/test/config", bad)
        assert status == 400, bad
    for bad in (
        {"api": "Produce", "error": 16},
        {"api": "Heartbeat", "error": "NO_SUCH"},
        {"api": "Heartbeat", "error": 0},
    ):
        assert http.call("POST", "/v1/test/errors", bad)[0] == 400, bad
    assert http.call("POST", "/v1/test/groups/nobody/rebalance")[0] == 404


def test_a_lowered_session_bound_refuses_the_clients_session_timeout(
    http: Http, workers: Workers, topic: str
) -> None:
    http.post("/v1/test/config", {"group_max_session_timeout_ms": 10000})
    group = unique("bounds")
    consumer = workers.spawn("kafka-python", group, [topic], **LONG_SESSION)
    wait_until(
        lambda: (
            sample(http.metrics(), "kcoord_errors_total", api="JoinGroup", error="INVALID_SESSION_TIMEOUT")
            > 0
        ),
        30,
        "JoinGroup answered INVALID_SESSION_TIMEOUT",
    )
    assert http.group(group) is None or http.group(group)["members"] == []
    consumer.kill()


@pytest.mark.no_test_controls
def test_controls_are_forbidden_without_the_flag(http: Http) -> None:
    for method, path, body in (
        ("POST", "/v1/test/groups/g/rebalance", {}),
        ("POST", "/v1/test/groups/g/members/m/expire", {}),
        ("GET", "/v1/test/errors", None),
        ("POST", "/v1/test/errors", {"api": "Heartbeat", "error": 16}),
        ("POST", "/v1/test/latency", {"api": "Heartbeat", "ms": 10}),
        ("POST", "/v1/test/config", {"group_initial_rebalance_delay_ms": 0}),
        ("GET", "/v1/test/anything", None),
    ):
        status, answer = http.call(method, path, body)
        assert status == 403, (method, path, status, answer)
    assert http.get("/healthz") == {"status": "ok"}
    assert http.get("/readyz")["status"] == "ready"


def test_test_controls_without_an_http_endpoint_is_a_one_line_error(tmp_path: Any) -> None:
    done = run_command(
        [sys.executable, "-m", "kcoord", "serve", "--data-dir", str(tmp_path), "--enable-test-controls"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "--http-listen" in done.stderr


def test_advance_expires_a_confluent_kafka_process_session(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    """A member in its own process, a 45 s session: advance() expires it now; it learns it from its
    next heartbeat (UNKNOWN_MEMBER_ID) and joins again with a new member id."""
    group = unique("advance")
    consumer = workers.spawn("confluent-kafka", group, [topic], **LONG_SESSION)
    wait_for_split([consumer], topic_partitions)
    before = wait_until(lambda: _stable(http, group, 1), 30, "a Stable group")
    since = http.get("/v1/test/requests")[-1]["seq"]
    moved = http.post("/v1/test/advance", {"seconds": DEFAULT_SESSION_TIMEOUT_MS / 1000 + 1})
    assert moved["advanced_ms"] == DEFAULT_SESSION_TIMEOUT_MS + 1000 and moved["fired"] >= 1
    wait_until(
        lambda: any(
            r["api"] == "Heartbeat" and 25 in r["error_codes"]
            for r in http.get(f"/v1/test/requests?since={since}")
        ),
        15,
        "a heartbeat answered UNKNOWN_MEMBER_ID",
    )
    after = wait_until(lambda: _stable(http, group, 1), 30, "the member back")
    assert after["members"][0]["member_id"] != before["members"][0]["member_id"]
    wait_for_split([consumer], topic_partitions)


def test_a_kafka_python_process_retries_not_coordinator_from_a_fault(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    group = unique("retry")
    consumer = workers.spawn("kafka-python", group, [topic], **LONG_SESSION)
    wait_for_split([consumer], topic_partitions)
    fault = http.post(
        "/v1/test/faults",
        {"kind": "error", "api": "OffsetCommit", "error": "NOT_COORDINATOR", "count": 2, "group": group},
    )
    partition = sorted(consumer.assignment)[0]
    consumer.commit([(partition[0], partition[1], 3, "")])
    [fired] = http.get("/v1/test/faults/fired")
    assert fired["id"] == fault["id"] and fired["fired"] == 2
    committed = http.get(f"/v1/test/groups/{group}/committed")
    assert {"topic": partition[0], "partition": partition[1], "offset": 3, "metadata": ""} in committed


def test_a_consumer_process_keeps_its_connection_across_a_reset(
    http: Http, workers: Workers, topic: str, topic_partitions: Any
) -> None:
    """reset() forgets the topic and the group; the consumer process, on the same connections, rejoins
    the recreated topic's group (the request log's peers before and after are the same sockets)."""
    group = unique("reset")
    # If the consumer rejoins before the topic is back, its leader assigns nothing; kafka-python notices
    # the topic on its next metadata refresh (5 min by default), so the test refreshes every second.
    consumer = workers.spawn("kafka-python", group, [topic], metadata_max_age_ms=1000, **LONG_SESSION)
    wait_for_split([consumer], topic_partitions)
    peers = {r["peer"] for r in http.get("/v1/test/requests") if r["api"] == "Heartbeat"}
    # The rebalance listener's "assigned" events, not the polled "assignment" (emitted only when the
    # set changes): the new group usually hands the consumer the very partitions it had before.
    assigned_before = len(_assigned_events(consumer))
    assert http.post("/v1/test/reset")["reset_ms"] < 1000
    assert http.call("GET", f"/v1/test/groups/{group}")[0] == 404
    # kafka-python's metadata refresh may create the topic first (auto.create.topics.enable): 409 then
    status, _ = http.call("POST", "/v1/test/topics", {"name": topic, "partitions": len(topic_partitions)})
    assert status in (201, 409)
    wait_until(lambda: _stable(http, group, 1), 45, "the group again, after the reset")
    after = {r["peer"] for r in http.get("/v1/test/requests") if r["api"] in ("Heartbeat", "JoinGroup")}
    assert peers & after, (peers, after)
    wait_until(
        lambda: any(
            {t for t, _ in e["partitions"]} == {topic} for e in _assigned_events(consumer)[assigned_before:]
        ),
        30,
        "an assignment from the new group",
    )
