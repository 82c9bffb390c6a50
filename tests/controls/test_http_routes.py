"""The HTTP routes answer exactly what the TestControls methods return (bytes as base64)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.controls.conftest import Served

pytestmark = pytest.mark.timeout(120)


def _http(served: Served, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{served.http_port}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_topics_records_and_faults_over_http(served: Served) -> None:
    assert _http(served, "POST", "/v1/test/topics", {"name": "h", "partitions": 2}) == (
        201,
        {"name": "h", "partitions": 2},
    )
    status, refused = _http(served, "POST", "/v1/test/topics", {"name": "h"})
    assert status == 409 and "exists" in refused["error"]
    producer = KafkaProducer(bootstrap_servers=served.bootstrap)
    producer.send("h", key=b"k", value=b"\x00\xffv", headers=[("hd", b"x")], partition=1).get(10)
    producer.close(5)
    status, records = _http(served, "GET", "/v1/test/topics/h/records")
    assert status == 200 and len(records) == 1
    record = records[0]
    assert (record["partition"], record["offset"]) == (1, 0)
    assert base64.b64decode(record["key"]) == b"k" and base64.b64decode(record["value"]) == b"\x00\xffv"
    assert record["headers"] == [["hd", base64.b64encode(b"x").decode()]]
    assert _http(served, "GET", "/v1/test/topics/nope/records")[0] == 404

    error = {"kind": "error", "api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "topic": "h"}
    status, fault = _http(served, "POST", "/v1/test/faults", error)
    assert status == 201 and fault["kind"] == "error" and fault["topic"] == "h" and fault["fired"] == 0
    assert _http(served, "POST", "/v1/test/faults", {"kind": "delay", "api": "Metadata", "ms": 5})[0] == 201
    assert (
        _http(served, "POST", "/v1/test/faults", {"kind": "disconnect", "api": "Produce", "count": 2})[0]
        == 201
    )
    assert [f["kind"] for f in _http(served, "GET", "/v1/test/faults")[1]] == ["error", "delay", "disconnect"]
    for bad in (
        {"kind": "explode", "api": "Fetch"},
        {"kind": "delay", "api": "Fetch", "ms": 5, "topic": "h"},
        {"kind": "error", "api": "Fetch"},
        {"kind": "error", "error": 6},
    ):
        assert _http(served, "POST", "/v1/test/faults", bad)[0] == 400, bad
    assert _http(served, "GET", "/v1/test/faults/fired") == (200, [])
    assert _http(served, "DELETE", "/v1/test/faults") == (200, {})
    assert _http(served, "GET", "/v1/test/faults") == (200, [])


def test_reset_advance_groups_requests_and_config_over_http(served: Served) -> None:
    served.call(lambda c: c.create_topic("t", 1))
    status, config = _http(served, "GET", "/v1/test/config")
    assert status == 200 and config["group_initial_rebalance_delay_ms"] == 0
    status, refused = _http(served, "POST", "/v1/test/config", {"offsets_retention_ms": 5})
    assert status == 400 and "group_initial_rebalance_delay_ms" in refused["error"]
    status, changed = _http(served, "POST", "/v1/test/config", {"group_max_session_timeout_ms": 20000})
    assert status == 200 and changed["group_max_session_timeout_ms"] == 20000
    assert _http(served, "GET", "/v1/test/groups/none")[0] == 404
    assert _http(served, "GET", "/v1/test/groups/none/committed") == (200, [])
    status, requests = _http(served, "GET", "/v1/test/requests?since=0")
    assert status == 200 and requests == []  # only Kafka requests are logged
    assert _http(served, "GET", "/v1/test/requests?since=x")[0] == 400

    status, moved = _http(served, "POST", "/v1/test/advance", {"seconds": 12.5})
    assert status == 200 and moved["advanced_ms"] == 12_500 and moved["fired"] >= 0 and moved["now_ms"] > 0
    assert _http(served, "POST", "/v1/test/advance", {"seconds": -1})[0] == 400

    status, reset = _http(served, "POST", "/v1/test/reset", {})
    assert status == 200 and reset["reset_ms"] > 0
    assert _http(served, "GET", "/v1/test/topics/t/records")[0] == 404
    assert _http(served, "GET", "/v1/test/config")[1]["group_max_session_timeout_ms"] != 20000
