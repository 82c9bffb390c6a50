"""DescribeGroups (15), v0-6, flexible 5+.

v3 authorized operations; v4 group_instance_id for members; v6 a per-group error_message and
GROUP_ID_NOT_FOUND for a group that does not exist (KIP-1043; Kafka 4.3's DescribeGroups*.json).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, BYTES, INT16, INT32, NULLABLE_STRING, STRING

DESCRIBED_GROUP_MEMBER = Schema(
    "DescribedGroupMember",
    fields=(
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, since=4, default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("member_metadata", BYTES),
        Field("member_assignment", BYTES),
    ),
)

DESCRIBED_GROUP = Schema(
    "DescribedGroup",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, since=6, default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("protocol_type", STRING),
        Field("protocol_data", STRING),
        Field("members", array(DESCRIBED_GROUP_MEMBER)),
        Field("authorized_operations", INT32, since=3, default=-2147483648),
    ),
)

DESCRIBE_GROUPS_REQUEST = Schema(
    "DescribeGroupsRequest",
    api_key=15,
    versions=range(0, 7),
    flexible_since=5,
    fields=(
        Field("groups", array(STRING)),
        Field("include_authorized_operations", BOOLEAN, since=3),
    ),
)

DESCRIBE_GROUPS_RESPONSE = Schema(
    "DescribeGroupsResponse",
    api_key=15,
    versions=range(0, 7),
    flexible_since=5,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("groups", array(DESCRIBED_GROUP)),
    ),
)
