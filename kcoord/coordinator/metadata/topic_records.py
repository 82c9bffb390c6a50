"""Topic records: the registry's own durable record (storage record type 4).

Key   = INT16 version (0) + STRING name (INT16 length + UTF-8), like Kafka's record keys.
Value = INT16 version + UUID topic_id (16 bytes) + INT32 num_partitions; None = topic deleted.
Version 1 appends the topic's own configs (INT32 count, then STRING name and STRING value each);
a topic without configs is written as version 0.
The schemas (TOPIC_KEY, TOPIC_VALUE) live in kcoord/protocol/messages/records.py next to the other
coordinator-log records, so the pipeline decodes them without importing the coordinator.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kcoord.protocol.errors import DecodeError
from kcoord.protocol.messages.records import (
    TOPIC_CONFIGS_VERSION,
    TOPIC_KEY,
    TOPIC_RECORD_TYPE,
    TOPIC_REPLICATION_VERSION,
    TOPIC_VALUE,
    TOPIC_VERSION,
    decode_exact,
    encode_versioned,
)

__all__ = [
    "TOPIC_RECORD_TYPE",
    "TopicRecord",
    "TopicTombstone",
    "decode_topic_key",
    "decode_topic_value",
    "encode_topic_key",
    "encode_topic_value",
]


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic exists with `num_partitions` partitions (0..n-1), all led by this node."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: tuple[tuple[str, str], ...] = ()  # the topic's own settings, sorted by name
    # As CreateTopics asked (-1 resolved to the default, 1): a single node is its one replica whatever
    # the factor; a cluster lists that many live nodes as replicas (kcoord/cluster/leadership.py).
    replication_factor: int = 1

    def config_map(self) -> dict[str, str]:
        return dict(self.configs)


@dataclass(frozen=True, slots=True)
class TopicTombstone:
    """The topic was deleted."""

    name: str


def encode_topic_key(name: str) -> bytes:
    return encode_versioned(TOPIC_KEY, TOPIC_VERSION, {"name": name})


def decode_topic_key(key: bytes) -> str:
    try:
        return str(decode_exact(TOPIC_KEY, key)["name"])
    except DecodeError as exc:
        raise ValueError(f"bad topic key ({len(key)} bytes): {exc}") from None


def encode_topic_value(record: TopicRecord) -> bytes:
    fields: dict[str, object] = {"topic_id": record.topic_id, "num_partitions": record.num_partitions}
    if record.replication_factor != 1:
        fields["replication_factor"] = record.replication_factor
        version = TOPIC_REPLICATION_VERSION
    elif record.configs:
        version = TOPIC_CONFIGS_VERSION
    else:
        return encode_versioned(TOPIC_VALUE, TOPIC_VERSION, fields)
    configs = [{"name": name, "value": value} for name, value in record.configs]
    return encode_versioned(TOPIC_VALUE, version, fields | {"configs": configs})


def decode_topic_value(name: str, value: bytes) -> TopicRecord:
    try:
        fields = decode_exact(TOPIC_VALUE, value)
    except DecodeError as exc:
        raise ValueError(f"bad topic value for {name!r} ({len(value)} bytes): {exc}") from None
    configs = tuple((str(c["name"]), str(c["value"])) for c in fields.get("configs", ()))
    return TopicRecord(
        name, fields["topic_id"], fields["num_partitions"], configs, int(fields["replication_factor"])
    )
