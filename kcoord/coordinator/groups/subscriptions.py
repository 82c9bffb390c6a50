"""The one field of ConsumerProtocolSubscription the coordinator reads: the subscribed topics.

Kafka's coordinator parses only the v0 prefix (INT16 version, ARRAY[STRING] topics) of every
version, because later versions only append fields (docs/kafka-group-protocol.md §7).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

__all__ = ["CONSUMER_PROTOCOL_TYPE", "subscribed_topics", "topics_of"]

CONSUMER_PROTOCOL_TYPE = "consumer"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def topics_of(metadata: bytes) -> frozenset[str] | None:
    """The topics of one subscription, or None if the bytes do not parse."""
    try:
        (version,) = _I16.unpack_from(metadata, 0)
        (count,) = _I32.unpack_from(metadata, 2)
        if version < 0 or count < 0:
            return None
        pos, topics = 6, []
        for _ in range(count):
            (length,) = _I16.unpack_from(metadata, pos)
            if length < 0 or pos + 2 + length > len(metadata):
                return None
            topics.append(metadata[pos + 2 : pos + 2 + length].decode("utf-8"))
            pos += 2 + length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)


def subscribed_topics(metadatas: Iterable[bytes]) -> frozenset[str] | None:
    """Union of the members' subscriptions; None if any of them is unparsable (Kafka: unknown)."""
    union: set[str] = set()
    for metadata in metadatas:
        topics = topics_of(metadata)
        if topics is None:
            return None
        union |= topics
    return frozenset(union)
