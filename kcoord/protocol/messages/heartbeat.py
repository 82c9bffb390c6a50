"""Heartbeat (12), v0-4, flexible 4+.

v1 throttle_time_ms; v3 group_instance_id (KIP-345).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import INT16, INT32, NULLABLE_STRING, STRING

HEARTBEAT_REQUEST = Schema(
    "HeartbeatRequest",
    api_key=12,
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=3, default=None),
    ),
)

HEARTBEAT_RESPONSE = Schema(
    "HeartbeatResponse",
    api_key=12,
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16),
    ),
)
