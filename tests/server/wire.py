"""Raw-socket helpers for server tests: requests and responses through protocol's codec."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kcoord.protocol.frames import decode_response, encode_request
from tests.kcoord_process import recv_exactly

__all__ = ["call", "connect", "create_topic", "decode_response", "is_closed", "read_frame", "send"]

_SIZE = struct.Struct(">i")


def connect(address: tuple[str, int], timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout)
    sock.settimeout(timeout)
    return sock


def send(
    sock: socket.socket,
    api_key: int,
    version: int,
    correlation_id: int,
    body: dict[str, Any],
    client_id: str | None = "kcoord-test",
) -> None:
    sock.sendall(encode_request(api_key, version, correlation_id, body, client_id=client_id))


def read_frame(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(recv_exactly(sock, 4))
    return recv_exactly(sock, size)


def call(
    sock: socket.socket, api_key: int, version: int, body: dict[str, Any], correlation_id: int = 1
) -> dict[str, Any]:
    send(sock, api_key, version, correlation_id, body)
    got, response = decode_response(api_key, version, read_frame(sock))
    assert got == correlation_id
    return response


def create_topic(
    sock: socket.socket, name: str, partitions: int, version: int = 4, **extra: object
) -> dict[str, Any]:
    """CreateTopics for one topic (replication factor 1 unless `extra` says otherwise): its result."""
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
        **extra,
    }
    return call(sock, 19, version, {"topics": [topic], "timeout_ms": 5000})["topics"][0]  # type: ignore[no-any-return]


def is_closed(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the server closed the connection (EOF or reset) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        if not data:
            return True
    return False
