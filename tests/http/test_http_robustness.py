"""The HTTP endpoint shares the coordinator's event loop: garbage and slow HTTP clients must neither
stop it answering nor disturb the Kafka listener (a Prober does ApiVersions round trips meanwhile)."""

from __future__ import annotations

import contextlib
import os
import socket
import time

import pytest

from tests.http.conftest import Http
from tests.integration.conftest import Prober, wait_until
from tests.kcoord_process import KcoordServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

GARBAGE = (
    b"\x00\x00\x00\x10garbage-kafka-frame",
    b"GET /metrics HTTP/9.9\r\n\r\n",
    b"NOTAMETHOD / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"X-Big: " + b"b" * 200_000 + b"\r\n\r\n",
    b"POST /v1/test/errors HTTP/1.1\r\nContent-Length: 5\r\n\r\n{{{{{",
    b"POST /v1/test/errors HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
)


def _send(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, contextlib.suppress(OSError):
        sock.sendall(data)
        sock.settimeout(2)
        sock.recv(65536)


def test_garbage_and_slow_http_clients_disturb_neither_endpoint(server: KcoordServer, http: Http) -> None:
    with Prober(server.address) as prober:
        for data in GARBAGE:
            _send(http.port, data)
        for _ in range(20):
            _send(http.port, os.urandom(4096))
        # Slow clients: half-sent requests that stay open while others are served.
        slow = [socket.create_connection(("127.0.0.1", http.port), timeout=5) for _ in range(50)]
        try:
            for sock in slow:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
            started = time.monotonic()
            for _ in range(20):
                assert http.get("/healthz") == {"status": "ok"}
                assert "kcoord_open_connections" in http.get("/metrics")
            assert time.monotonic() - started < 5
            probed = prober.round_trips  # the Kafka listener keeps answering while they hang on
            wait_until(lambda: prober.round_trips >= probed + 10, 10, "ten probes beside the slow clients")
        finally:
            for sock in slow:
                sock.close()
        prober.check()
    assert server.alive()
    assert http.get("/readyz")["status"] == "ready"
    assert http.call("GET", "/v1/groups/none")[0] == 404
    assert http.call("POST", "/v1/test/errors", None)[0] == 400  # an empty body is not JSON
