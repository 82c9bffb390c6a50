"""LeaveGroup (13), v0-5, flexible 4+.

v3 replaces the single member_id with a members batch (KIP-345); v5 adds a per-member reason
(KIP-800).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, NULLABLE_STRING, STRING

MEMBER_IDENTITY = Schema(
    "MemberIdentity",
    fields=(
        Field("member_id", STRING, since=3),
        Field("group_instance_id", NULLABLE_STRING, since=3, default=None),
        Field("reason", NULLABLE_STRING, since=5, default=None),
    ),
)

MEMBER_RESPONSE = Schema(
    "MemberResponse",
    fields=(
        Field("member_id", STRING, since=3),
        Field("group_instance_id", NULLABLE_STRING, since=3),
        Field("error_code", INT16, since=3),
    ),
)

LEAVE_GROUP_REQUEST = Schema(
    "LeaveGroupRequest",
    api_key=13,
    versions=range(0, 6),
    flexible_since=4,
    fields=(
        Field("group_id", STRING),
        Field("member_id", STRING, until=2),
        Field("members", array(MEMBER_IDENTITY), since=3),
    ),
)

LEAVE_GROUP_RESPONSE = Schema(
    "LeaveGroupResponse",
    api_key=13,
    versions=range(0, 6),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16),
        Field("members", array(MEMBER_RESPONSE), since=3),
    ),
)
