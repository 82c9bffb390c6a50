"""Size-prefixed frames and the request/response headers around message bodies.

Request header v1 = api_key, api_version, correlation_id, client_id; v2 adds a tagged-field section.
The client_id stays a legacy INT16-length nullable string even in v2, so any server can read the
header of an ApiVersions request of a version it does not know (RequestHeader.json,
"flexibleVersions": "none" on ClientId). ApiVersions responses always use header v0 (KIP-511,
ApiMessageTypeGenerator special-cases key 18) so a client can parse the fallback answer.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

from kcoord.protocol.codecs import Codec, codec_for
from kcoord.protocol.errors import DecodeError, FrameTooLarge, UnsupportedVersion
from kcoord.protocol.schema import Schema
from kcoord.protocol.types import decode_uvarint, encode_uvarint

DEFAULT_MAX_FRAME_BYTES = 104857600  # Kafka's socket.request.max.bytes
API_VERSIONS_KEY = 18

_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")
_REQUEST_HEAD_V1 = struct.Struct(">hhih")
_RESPONSE_HEAD = struct.Struct(">ii")
_I16 = _CLIENT_ID_LEN = struct.Struct(">h")

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "DecodeError",
    "FrameSplitter",
    "FrameTooLarge",
    "RequestHeader",
    "UnsupportedVersion",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "request_header_version",
    "response_header_version",
]


class FrameSplitter:
    """Cuts a byte stream, fed in arbitrary chunks, into frame payloads."""

    __slots__ = ("_buffer", "_needed", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._needed = 4  # bytes the buffered partial frame needs before anything can be cut

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < self._needed:
                return []  # a big frame arriving in pieces: append only, never re-copy the buffer
            data = bytes(buffer)
            buffer.clear()
        # Common case: the buffer is empty and `data` holds whole frames, sliced straight out of it.
        frames: list[bytes] = []
        start, end = 0, len(data)
        needed = 4
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(data, start)
            if size < 0:
                raise DecodeError(None, None, "size", f"negative frame size {size}")
            if size > self.max_frame_bytes:
                raise FrameTooLarge(
                    None, None, "size", f"frame of {size} bytes exceeds {self.max_frame_bytes}"
                )
            if end - start - 4 < size:
                needed = 4 + size
                break
            frames.append(data[start + 4 : start + 4 + size])
            start += 4 + size
        if start < end:
            buffer += memoryview(data)[start:]
            self._needed = needed
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._buffer)


class RequestHeader(NamedTuple):
    """Request header v1/v2 fields (v0 has no client_id; only ControlledShutdown v0 uses it).

    A NamedTuple rather than a frozen dataclass: equally immutable, and built in a third of the time
    on a path every request takes."""

    request_api_key: int
    request_api_version: int
    correlation_id: int
    client_id: str | None


def _request_schemas() -> dict[int, Schema]:
    from kcoord.protocol.messages import REQUEST_SCHEMAS  # the registry imports every message module

    return REQUEST_SCHEMAS


def _response_schemas() -> dict[int, Schema]:
    from kcoord.protocol.messages import RESPONSE_SCHEMAS

    return RESPONSE_SCHEMAS


def _flexible(schema: Schema, api_version: int) -> bool:
    return schema.flexible_since is not None and api_version >= schema.flexible_since


def request_header_version(api_key: int, api_version: int) -> int:
    schema = _request_schemas().get(api_key)
    return 2 if schema is not None and _flexible(schema, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    schema = _response_schemas().get(api_key)
    return 1 if schema is not None and _flexible(schema, api_version) else 0


def decode_request_header(payload: bytes, flexible: bool) -> tuple[RequestHeader, int]:
    """(header, offset of the body)."""
    if type(payload) is not bytes:
        payload = bytes(payload)  # slices must have .decode(); memoryview/bytearray slices do not
    try:
        api_key, api_version, correlation_id, length = _REQUEST_HEAD_V1.unpack_from(payload)
        pos = 10
        client_id = None
        if length >= 0:
            pos += length
            if pos > len(payload):
                raise ValueError("client_id truncated")
            client_id = payload[10:pos].decode()
        elif length != -1:
            raise ValueError(f"negative client_id length {length}")
        if flexible:
            # Nearly every client sends an empty header tag section: one zero byte.
            pos = pos + 1 if payload[pos] == 0 else _skip_tags(payload, pos)
    except (struct.error, IndexError, ValueError) as exc:
        raise DecodeError(_api_key_or_none(payload), None, "request header", str(exc)) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def _api_key_or_none(payload: bytes) -> int | None:
    return _I16.unpack_from(payload)[0] if len(payload) >= 2 else None


def _skip_tags(payload: bytes, pos: int) -> int:
    count, pos = decode_uvarint(payload, pos)
    for _ in range(count):
        _tag, pos = decode_uvarint(payload, pos)
        size, pos = decode_uvarint(payload, pos)
        pos += size
        if pos > len(payload):
            raise ValueError("header tagged field runs past the end")
    return pos


# (api_key, api_version) -> what the hot path needs, resolved once: the registry lookups, the
# flexibility test and codec_for's cache cost more than decoding a Heartbeat body.
_REQUESTS: dict[tuple[int, int], tuple[Codec, bool]] = {}
_RESPONSES: dict[tuple[int, int], tuple[Codec, bytes]] = {}


def _request_entry(api_key: int, api_version: int) -> tuple[Codec, bool] | None:
    entry = _REQUESTS.get((api_key, api_version))
    if entry is None:
        schema = _request_schemas().get(api_key)
        if schema is None or schema.versions is None or api_version not in schema.versions:
            return None
        entry = _REQUESTS[api_key, api_version] = (
            codec_for(schema, api_version),
            _flexible(schema, api_version),
        )
    return entry


def _response_entry(api_key: int, api_version: int) -> tuple[Codec, bytes]:
    entry = _RESPONSES.get((api_key, api_version))
    if entry is None:
        # Response header v1 adds an (empty) tag section after the correlation id.
        tags = b"\x00" if response_header_version(api_key, api_version) == 1 else b""
        entry = _RESPONSES[api_key, api_version] = (
            codec_for(_response_schemas()[api_key], api_version),
            tags,
        )
    return entry


def decode_request(payload: bytes) -> tuple[RequestHeader, dict[str, Any]]:
    """Header and body of a request frame's payload; UnsupportedVersion for what we do not define."""
    if type(payload) is not bytes:
        payload = bytes(payload)
    if len(payload) < 8:
        raise DecodeError(_api_key_or_none(payload), None, "request header", "shorter than 8 bytes")
    api_key, api_version, correlation_id = _REQUEST_HEAD.unpack_from(payload)
    entry = _request_entry(api_key, api_version)
    if entry is None:
        raise UnsupportedVersion(api_key, api_version, correlation_id)
    codec, flexible = entry
    header, pos = decode_request_header(payload, flexible)
    try:
        # Bytes left after a fully decoded body are ignored, as Kafka does (AbstractRequest.parseRequest
        # reads the body from the buffer and never checks what remains): librdkafka's Metadata v12 with
        # null topics leaves a 4-byte array placeholder where the compact null takes one byte.
        body, _ = codec.parse_prefix(payload[pos:])
    except DecodeError as exc:
        exc.api_key, exc.api_version = api_key, api_version
        raise
    return header, body


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """A complete size-prefixed response frame."""
    codec, tags = _response_entry(api_key, api_version)
    encoded = codec.build(body)
    return _RESPONSE_HEAD.pack(4 + len(tags) + len(encoded), correlation_id) + tags + encoded


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, dict[str, Any]]:
    """(correlation_id, body) of a response frame's payload (without its size prefix)."""
    codec, tags = _response_entry(api_key, api_version)
    try:
        (correlation_id,) = _SIZE.unpack_from(payload)
        pos = _skip_tags(payload, 4) if tags else 4
    except (struct.error, IndexError, ValueError) as exc:
        raise DecodeError(api_key, api_version, "response header", str(exc)) from None
    return correlation_id, codec.parse(payload[pos:])


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: Mapping[str, Any],
    client_id: str | None = "kcoord",
) -> bytes:
    """A complete size-prefixed request frame (clients, tests and benchmarks)."""
    schema = _request_schemas()[api_key]
    encoded = codec_for(schema, api_version).build(body)
    if client_id is None:
        client = _CLIENT_ID_LEN.pack(-1)
    else:
        raw = client_id.encode()
        client = _CLIENT_ID_LEN.pack(len(raw)) + raw
    tags = encode_uvarint(0) if _flexible(schema, api_version) else b""
    payload = b"".join((_REQUEST_HEAD.pack(api_key, api_version, correlation_id), client, tags, encoded))
    return _SIZE.pack(len(payload)) + payload
