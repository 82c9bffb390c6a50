"""Raw-socket helpers for server tests: frame requests with protocol's `encode_request`, read frames."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from protocol.frames import encode_request
from protocol.schema import codec_for

from protocol.messages import RESPONSE_SCHEMAS

__all__ = ["call", "connect", "decode_response", "is_closed", "read_frame", "send"]

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


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(_recv_exactly(sock, 4))
    return _recv_exactly(sock, size)


def _skip_tagged(payload: bytes, pos: int) -> int:
    count, pos = _uvarint(payload, pos)
    for _ in range(count):
        _, pos = _uvarint(payload, pos)
        size, pos = _uvarint(payload, pos)
        pos += size
    return pos


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, dict[str, Any]]:
    """(correlation id, body). Header v1 (tag buffer) for flexible versions, except ApiVersions (v0)."""
    (correlation_id,) = _SIZE.unpack_from(payload)
    schema = RESPONSE_SCHEMAS[api_key]
    flexible = schema.flexible_since is not None and version >= schema.flexible_since
    pos = 4 if api_key == 18 or not flexible else _skip_tagged(payload, 4)
    return correlation_id, dict(codec_for(schema, version).parse(payload[pos:]))


def call(
    sock: socket.socket, api_key: int, version: int, body: dict[str, Any], correlation_id: int = 1
) -> dict[str, Any]:
    send(sock, api_key, version, correlation_id, body)
    got, response = decode_response(api_key, version, read_frame(sock))
    assert got == correlation_id
    return response


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
