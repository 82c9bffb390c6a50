"""JoinGroup (11), v0-9, flexible 6+.

v1 rebalance_timeout_ms (v0: the session timeout is used); v4 MEMBER_ID_REQUIRED (KIP-394); v5
group_instance_id (KIP-345); v7 protocol_type in the response and a nullable protocol_name -- before
v7 it must be "" not null (apache/kafka PR #12864); v8 reason (KIP-800); v9 skip_assignment.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, BYTES, INT16, INT32, NULLABLE_STRING, STRING

JOIN_GROUP_REQUEST_PROTOCOL = Schema(
    "JoinGroupRequestProtocol",
    fields=(
        Field("name", STRING),
        Field("metadata", BYTES),
    ),
)

JOIN_GROUP_RESPONSE_MEMBER = Schema(
    "JoinGroupResponseMember",
    fields=(
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=5, default=None),
        Field("metadata", BYTES),
    ),
)

JOIN_GROUP_REQUEST = Schema(
    "JoinGroupRequest",
    api_key=11,
    versions=range(0, 10),
    flexible_since=6,
    fields=(
        Field("group_id", STRING),
        Field("session_timeout_ms", INT32),
        Field("rebalance_timeout_ms", INT32, since=1, default=-1),
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=5, default=None),
        Field("protocol_type", STRING),
        Field("protocols", array(JOIN_GROUP_REQUEST_PROTOCOL)),
        Field("reason", NULLABLE_STRING, since=8, default=None),
    ),
)

JOIN_GROUP_RESPONSE = Schema(
    "JoinGroupResponse",
    api_key=11,
    versions=range(0, 10),
    flexible_since=6,
    fields=(
        Field("throttle_time_ms", INT32, since=2),
        Field("error_code", INT16),
        Field("generation_id", INT32, default=-1),
        Field("protocol_type", NULLABLE_STRING, since=7, default=None),
        Field("protocol_name", STRING, nullable_since=7),
        Field("leader", STRING),
        Field("skip_assignment", BOOLEAN, since=9, default=False),
        Field("member_id", STRING),
        Field("members", array(JOIN_GROUP_RESPONSE_MEMBER)),
    ),
)
