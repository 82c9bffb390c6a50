"""Topic records: the registry's own durable record (storage record type 4, our schema).

Key   = INT16 version (0) + STRING name (INT16 length + UTF-8), like Kafka's record keys.
Value = INT16 version + UUID topic_id (16 bytes) + INT32 num_partitions; None = topic deleted.
Version 1 appends the topic's own configs (those set by CreateTopics / AlterConfigs, not defaults):
INT32 count + count x (STRING name, STRING value). A topic without configs is written as version 0,
so a directory without configs stays readable by a kcoord that predates them.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

__all__ = [
    "TOPIC_RECORD_TYPE",
    "TopicRecord",
    "TopicTombstone",
    "decode_topic_key",
    "decode_topic_value",
    "encode_topic_key",
    "encode_topic_value",
]

TOPIC_RECORD_TYPE = 4
_VERSION = 0
_CONFIGS_VERSION = 1
_KEY_HEAD = struct.Struct(">hH")
_VALUE = struct.Struct(">h16si")
_COUNT = struct.Struct(">i")
_LENGTH = struct.Struct(">H")


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic exists with `num_partitions` partitions (0..n-1), all led by this node."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: tuple[tuple[str, str], ...] = ()  # the topic's own settings, sorted by name

    def config_map(self) -> dict[str, str]:
        return dict(self.configs)


@dataclass(frozen=True, slots=True)
class TopicTombstone:
    """The topic was deleted."""

    name: str


def encode_topic_key(name: str) -> bytes:
    raw = name.encode()
    return _KEY_HEAD.pack(_VERSION, len(raw)) + raw


def decode_topic_key(key: bytes) -> str:
    version, length = _KEY_HEAD.unpack_from(key)
    if version != _VERSION or len(key) != _KEY_HEAD.size + length:
        raise ValueError(f"bad topic key (version {version}, {len(key)} bytes)")
    return key[_KEY_HEAD.size :].decode()


def encode_topic_value(record: TopicRecord) -> bytes:
    if not record.configs:
        return _VALUE.pack(_VERSION, record.topic_id.bytes, record.num_partitions)
    parts = [_VALUE.pack(_CONFIGS_VERSION, record.topic_id.bytes, record.num_partitions)]
    parts.append(_COUNT.pack(len(record.configs)))
    for key, val in record.configs:
        for text in (key.encode(), val.encode()):
            parts += (_LENGTH.pack(len(text)), text)
    return b"".join(parts)


def decode_topic_value(name: str, value: bytes) -> TopicRecord:
    if len(value) < _VALUE.size:
        raise ValueError(f"bad topic value for {name!r} ({len(value)} bytes)")
    version, topic_id, num_partitions = _VALUE.unpack_from(value)
    if version == _VERSION and len(value) == _VALUE.size:
        return TopicRecord(name, uuid.UUID(bytes=topic_id), num_partitions)
    if version != _CONFIGS_VERSION:
        raise ValueError(f"unknown topic value version {version} for {name!r} ({len(value)} bytes)")
    try:
        (count,) = _COUNT.unpack_from(value, _VALUE.size)
        pos = _VALUE.size + _COUNT.size
        texts: list[str] = []
        for _ in range(2 * count):
            (length,) = _LENGTH.unpack_from(value, pos)
            pos += _LENGTH.size
            if pos + length > len(value):
                raise ValueError("truncated")
            texts.append(value[pos : pos + length].decode())
            pos += length
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"bad topic configs for {name!r}: {exc}") from None
    if pos != len(value):
        raise ValueError(f"bad topic value for {name!r}: {len(value) - pos} trailing bytes")
    configs = tuple(zip(texts[0::2], texts[1::2], strict=True))
    return TopicRecord(name, uuid.UUID(bytes=topic_id), num_partitions, configs)
