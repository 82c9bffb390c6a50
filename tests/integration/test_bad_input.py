"""Bad input against a running server: it closes only the offending connection, keeps answering other
clients throughout (a `Prober` does ApiVersions round trips all along), and its memory stays bounded."""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from tests.integration.conftest import (
    Prober,
    raise_open_files_limit,
    wait_until,
)
from tests.kcoord_process import KcoordServer, api_versions_request, api_versions_round_trip, recv_exactly

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180), pytest.mark.server_args("--fsync", "never")]

MIB = 1024


@contextlib.contextmanager
def connection(server: KcoordServer) -> Iterator[socket.socket]:
    sock = socket.create_connection(server.address, timeout=10)
    sock.settimeout(10)
    try:
        yield sock
    finally:
        sock.close()


def closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the server has closed (EOF or reset); False if it sends a byte or the wait times out."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


@pytest.fixture
def baseline_rss(server: KcoordServer) -> int:
    """The server's RSS (KiB) once it has served a few requests."""
    with connection(server) as sock:
        for i in range(10):
            api_versions_round_trip(sock, i)
    return server.rss_kib()


def assert_rss_bounded(server: KcoordServer, baseline: int, limit_mib: int) -> None:
    grown = (server.rss_kib() - baseline) / MIB
    assert grown < limit_mib, f"the server's RSS grew by {grown:.0f} MiB (limit {limit_mib} MiB)"


def test_random_bytes_close_only_that_connection(server: KcoordServer, baseline_rss: int) -> None:
    rng = random.Random(20261122)
    with Prober(server.address) as prober:
        for _ in range(30):
            blob = rng.randbytes(rng.choice([1, 7, 64, 4096, 65536]))
            with connection(server) as sock:
                with contextlib.suppress(ConnectionError):
                    sock.sendall(blob)
                    sock.shutdown(socket.SHUT_WR)
                sock.settimeout(10)
                # Whatever the server does with garbage (close, or wait for the rest of a plausible
                # frame until we hang up), it must not answer it as if it were a request.
                with contextlib.suppress(ConnectionError, TimeoutError):
                    assert sock.recv(4) == b"", "the server answered random bytes"
        # A well-sized frame whose body is garbage for a real API: that connection is closed.
        for api_key in (0, 3, 8, 9, 10, 11, 12, 14):
            body = struct.pack(">hhi", api_key, 1, 7) + rng.randbytes(40)
            with connection(server) as sock:
                sock.sendall(struct.pack(">i", len(body)) + body)
                assert closed_by_server(sock), f"garbage for api_key={api_key} did not close the connection"
        prober.check()
    assert server.alive()
    assert_rss_bounded(server, baseline_rss, 32)


@pytest.mark.parametrize("size", [2**31 - 1, 2**31], ids=["2GiB-1", "2GiB-as-negative"])
def test_huge_size_prefix_closes_the_connection_without_allocating(
    server: KcoordServer, baseline_rss: int, size: int
) -> None:
    with Prober(server.address) as prober:
        with connection(server) as sock:
            sock.sendall(struct.pack(">I", size) + b"\x00" * 1024)
            assert closed_by_server(sock), "a 2 GiB size prefix did not close the connection"
        prober.check()
    assert_rss_bounded(server, baseline_rss, 16)


def test_frame_cut_midway_leaves_the_server_serving(server: KcoordServer, baseline_rss: int) -> None:
    frame = api_versions_request(5)
    with Prober(server.address) as prober:
        # The client hangs up in the middle of a frame.
        with connection(server) as sock:
            sock.sendall(frame[: len(frame) // 2])
        # The client stops in the middle of a frame and stays connected: only it waits.
        with connection(server) as stalled:
            stalled.sendall(api_versions_request(1) + frame[:6])
            (size,) = struct.unpack(">i", recv_exactly(stalled, 4))
            recv_exactly(stalled, size)  # the complete request before the cut is answered
            with connection(server) as other:
                api_versions_round_trip(other, 9)
            # The rest of the frame arrives later: it is answered as usual.
            stalled.sendall(frame[6:])
            (size,) = struct.unpack(">i", recv_exactly(stalled, 4))
            assert struct.unpack(">i", recv_exactly(stalled, size)[:4]) == (5,)
        prober.check()
    assert_rss_bounded(server, baseline_rss, 16)


def test_client_that_connects_and_never_sends_does_not_block_others(
    server: KcoordServer, baseline_rss: int
) -> None:
    with Prober(server.address) as prober, connection(server) as silent, connection(server) as half:
        half.sendall(b"\x00\x00")  # half a size prefix, then nothing
        wait_until(lambda: prober.round_trips >= 50, 20, "50 probe round trips next to the silent clients")
        assert not closed_by_server(silent, timeout=0.2)
        prober.check()
    assert_rss_bounded(server, baseline_rss, 16)


def test_ten_thousand_idle_connections(server: KcoordServer, baseline_rss: int) -> None:
    count = 10_000
    limit = raise_open_files_limit()
    if limit < count + 200:
        pytest.skip(f"RLIMIT_NOFILE hard limit {limit} is too low for {count} connections")
    sockets: list[socket.socket] = []
    with Prober(server.address) as prober:
        try:
            started = time.monotonic()
            for _ in range(count):
                sockets.append(socket.create_connection(server.address, timeout=10))
            opened_in = time.monotonic() - started
            # The server accepted them all and still answers a new client promptly.
            with connection(server) as sock:
                api_versions_round_trip(sock, 1)
            # ... and one of the idle ones too.
            sockets[0].settimeout(10)
            api_versions_round_trip(sockets[0], 2)
            assert_rss_bounded(server, baseline_rss, 256)
        finally:
            for sock in sockets:
                sock.close()
        with connection(server) as sock:
            api_versions_round_trip(sock, 3)
        prober.check(max_latency=5.0)
    assert server.alive()
    assert opened_in < 60
