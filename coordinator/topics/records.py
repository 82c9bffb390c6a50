"""Topic records: the registry's own durable record (storage record type 4, our schema).

Key   = INT16 version (0) + STRING name (INT16 length + UTF-8), like Kafka's record keys.
Value = INT16 version (0) + UUID topic_id (16 bytes) + INT32 num_partitions; None = topic deleted.
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
_KEY_HEAD = struct.Struct(">hH")
_VALUE = struct.Struct(">h16si")


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic exists with `num_partitions` partitions (0..n-1), all led by this node."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int


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
    return _VALUE.pack(_VERSION, record.topic_id.bytes, record.num_partitions)


def decode_topic_value(name: str, value: bytes) -> TopicRecord:
    if len(value) != _VALUE.size:
        raise ValueError(f"bad topic value for {name!r} ({len(value)} bytes)")
    version, topic_id, num_partitions = _VALUE.unpack(value)
    if version != _VERSION:
        raise ValueError(f"unknown topic value version {version} for {name!r}")
    return TopicRecord(name, uuid.UUID(bytes=topic_id), num_partitions)
