"""SyncGroup (14), v0-5, flexible 4+.

v3 group_instance_id; v5 protocol_type / protocol_name in request and response (KIP-559).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BYTES, INT16, INT32, NULLABLE_STRING, STRING

SYNC_GROUP_REQUEST_ASSIGNMENT = Schema(
    "SyncGroupRequestAssignment",
    fields=(
        Field("member_id", STRING),
        Field("assignment", BYTES),
    ),
)

SYNC_GROUP_REQUEST = Schema(
    "SyncGroupRequest",
    api_key=14,
    versions=range(0, 6),
    flexible_since=4,
    fields=(
        Field("group_id", STRING),
        Field("generation_id", INT32),
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=3, default=None),
        Field("protocol_type", NULLABLE_STRING, since=5, default=None),
        Field("protocol_name", NULLABLE_STRING, since=5, default=None),
        Field("assignments", array(SYNC_GROUP_REQUEST_ASSIGNMENT)),
    ),
)

SYNC_GROUP_RESPONSE = Schema(
    "SyncGroupResponse",
    api_key=14,
    versions=range(0, 6),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16),
        Field("protocol_type", NULLABLE_STRING, since=5, default=None),
        Field("protocol_name", NULLABLE_STRING, since=5, default=None),
        Field("assignment", BYTES),
    ),
)
