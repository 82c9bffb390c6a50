"""ConsumerProtocol subscription and assignment bytes (ProtocolType "consumer"), v0-3.

JoinGroup `protocols[].metadata` carries a subscription and SyncGroup `assignments[].assignment` an
assignment. Both are an INT16 version followed by a non-flexible struct (apache/kafka
clients/src/main/resources/common/message/ConsumerProtocolSubscription.json / ...Assignment.json).
Fields are only ever appended, so a version newer than ours is read as our newest version and its
unknown tail is ignored -- Kafka's ConsumerProtocol.checkSubscriptionVersion does the same.
"""

import struct
from collections.abc import Mapping
from typing import Any

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.errors import DecodeError
from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT32, NULLABLE_BYTES, NULLABLE_STRING, STRING

SUBSCRIPTION_VERSIONS = range(0, 4)
ASSIGNMENT_VERSIONS = range(0, 4)

OWNED_PARTITION = Schema(
    "TopicPartition",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(INT32)),
    ),
)

ASSIGNED_PARTITION = Schema(
    "TopicPartition",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(INT32)),
    ),
)

CONSUMER_PROTOCOL_SUBSCRIPTION = Schema(
    "ConsumerProtocolSubscription",
    versions=SUBSCRIPTION_VERSIONS,
    fields=(
        Field("topics", array(STRING)),
        Field("user_data", NULLABLE_BYTES, default=None),
        Field("owned_partitions", array(OWNED_PARTITION), since=1),  # KIP-429 (cooperative)
        Field("generation_id", INT32, since=2, default=-1),
        Field("rack_id", NULLABLE_STRING, since=3, default=None),  # KIP-881
    ),
)

# v1-v3 are layout-identical to v0; the version only tells the leader what the member understands.
CONSUMER_PROTOCOL_ASSIGNMENT = Schema(
    "ConsumerProtocolAssignment",
    versions=ASSIGNMENT_VERSIONS,
    fields=(
        Field("assigned_partitions", array(ASSIGNED_PARTITION)),
        Field("user_data", NULLABLE_BYTES, default=None),
    ),
)

_VERSION = struct.Struct(">h")


def encode_subscription(subscription: Mapping[str, Any], version: int = 3) -> bytes:
    """Version prefix + subscription struct, as Kafka's ConsumerProtocol.serializeSubscription."""
    codec = codec_for(CONSUMER_PROTOCOL_SUBSCRIPTION, version)
    return _VERSION.pack(version) + codec.build(subscription)


def decode_subscription(data: bytes) -> tuple[int, dict[str, Any]]:
    """Return (version as sent, fields). Versions above 3 are read as their v3 prefix."""
    return _decode(CONSUMER_PROTOCOL_SUBSCRIPTION, SUBSCRIPTION_VERSIONS[-1], data)


def encode_assignment(assignment: Mapping[str, Any], version: int = 3) -> bytes:
    codec = codec_for(CONSUMER_PROTOCOL_ASSIGNMENT, version)
    return _VERSION.pack(version) + codec.build(assignment)


def decode_assignment(data: bytes) -> tuple[int, dict[str, Any]]:
    """Return (version as sent, fields). Versions above 3 are read as their v3 prefix."""
    return _decode(CONSUMER_PROTOCOL_ASSIGNMENT, ASSIGNMENT_VERSIONS[-1], data)


def _decode(schema: Schema, newest: int, data: bytes) -> tuple[int, dict[str, Any]]:
    if len(data) < _VERSION.size:
        raise DecodeError(None, None, "version", f"{schema.name}: {len(data)} bytes, no version prefix")
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise DecodeError(None, version, "version", f"{schema.name}: negative version")
    known = min(version, newest)
    body = bytes(data[_VERSION.size :])
    # Kafka's ConsumerProtocol reads the fields it knows and ignores what a newer peer appended.
    return version, codec_for(schema, known).parse_prefix(body)[0]
