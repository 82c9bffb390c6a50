"""Fixtures for the HTTP endpoint's tests: a real `kcoord serve` with `--http-listen` (and, unless a
test is marked `no_test_controls`, `--enable-test-controls`), plus the integration suite's consumer
workers, producers and topics (separate processes, real clients)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import (  # noqa: F401  (fixtures reused by name)
    _attach_log,
    producers,
    pytest_runtest_makereport,
    topic,
    topic_partitions,
    workers,
)
from tests.kcoord_process import KcoordServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "no_test_controls: start the server without --enable-test-controls")


class Http:
    """A tiny client of the server's HTTP endpoint (urllib: independent of the server's library)."""

    def __init__(self, host: str, port: int) -> None:
        self.base = f"http://{host}:{port}"
        self.port = port

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, raw, ctype = response.status, response.read(), response.headers["Content-Type"]
        except urllib.error.HTTPError as exc:
            status, raw, ctype = exc.code, exc.read(), exc.headers["Content-Type"]
        if ctype and ctype.startswith("application/json"):
            return status, json.loads(raw)
        return status, raw.decode()

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def post(self, path: str, body: Any = None) -> Any:
        status, answer = self.call("POST", path, {} if body is None else body)
        assert status in (200, 201), (path, status, answer)
        return answer

    def group(self, group_id: str) -> dict[str, Any] | None:
        status, body = self.call("GET", f"/v1/groups/{group_id}")
        return body if status == 200 else None

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of /metrics, parsed with prometheus_client's own parser: (name, labels) -> value."""
        text = self.get("/metrics")
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }


def sample(metrics: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return metrics.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KcoordServer]:
    marker = request.node.get_closest_marker("server_args")
    controls = () if request.node.get_closest_marker("no_test_controls") else ("--enable-test-controls",)
    extra = ("--group-min-session-timeout-ms", "1000", "--http-listen", "127.0.0.1:0", *controls)
    srv = KcoordServer(
        tmp_path / "data", *extra, *(marker.args if marker else ()), log_path=tmp_path / "server.log"
    )
    try:
        srv.start()
        yield srv
    finally:
        srv.kill()
        _attach_log(request, "server log", tmp_path / "server.log")


@pytest.fixture
def http(server: KcoordServer) -> Http:
    match = server.wait_for(r"http endpoint on (\S+):(\d+)", 10)
    return Http(match.group(1), int(match.group(2)))
