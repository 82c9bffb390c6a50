"""ShareGroupDescribe (77), v1 only, flexible (KIP-932; v0 was early access, gone since Kafka 4.1).
Fields from apache/kafka clients/src/main/resources/common/message/ShareGroupDescribe{Request,
Response}.json, checked against Kafka 4.3.1's ShareGroupDescribeResponseData.SCHEMAS.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING, UUID

__all__ = ["SHARE_GROUP_DESCRIBE_REQUEST", "SHARE_GROUP_DESCRIBE_RESPONSE"]

SHARE_GROUP_DESCRIBE_REQUEST = Schema(
    "ShareGroupDescribeRequest",
    api_key=77,
    versions=range(1, 2),
    flexible_since=1,
    fields=(Field("group_ids", array(STRING)), Field("include_authorized_operations", BOOLEAN)),
)

SHARE_DESCRIBED_TOPIC_PARTITIONS = Schema(
    "TopicPartitions",
    fields=(Field("topic_id", UUID), Field("topic_name", STRING), Field("partitions", array(INT32))),
)

SHARE_DESCRIBED_ASSIGNMENT = Schema(
    "Assignment", fields=(Field("topic_partitions", array(SHARE_DESCRIBED_TOPIC_PARTITIONS)),)
)

SHARE_DESCRIBED_MEMBER = Schema(
    "Member",
    fields=(
        Field("member_id", STRING),
        Field("rack_id", NULLABLE_STRING, default=None),
        Field("member_epoch", INT32),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", array(STRING)),
        Field("assignment", SHARE_DESCRIBED_ASSIGNMENT),
    ),
)

SHARE_DESCRIBED_GROUP = Schema(
    "DescribedGroup",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("group_epoch", INT32),
        Field("assignment_epoch", INT32),
        Field("assignor_name", STRING),
        Field("members", array(SHARE_DESCRIBED_MEMBER)),
        Field("authorized_operations", INT32, default=-(2**31)),
    ),
)

SHARE_GROUP_DESCRIBE_RESPONSE = Schema(
    "ShareGroupDescribeResponse",
    api_key=77,
    versions=range(1, 2),
    flexible_since=1,
    fields=(Field("throttle_time_ms", INT32), Field("groups", array(SHARE_DESCRIBED_GROUP))),
)
