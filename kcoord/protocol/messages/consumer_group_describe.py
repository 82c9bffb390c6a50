"""ConsumerGroupDescribe (69), v0-1, flexible in every version (KIP-848).

v1 adds each member's MemberType (KIP-1099: -1 unknown, 0 classic, 1 consumer); the request is the
same in both. Fields from apache/kafka
clients/src/main/resources/common/message/ConsumerGroupDescribe{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING, UUID

CONSUMER_GROUP_DESCRIBE_REQUEST = Schema(
    "ConsumerGroupDescribeRequest",
    api_key=69,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("group_ids", array(STRING)),
        Field("include_authorized_operations", BOOLEAN),
    ),
)

DESCRIBED_TOPIC_PARTITIONS = Schema(
    "TopicPartitions",
    fields=(
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", array(INT32)),
    ),
)

DESCRIBED_ASSIGNMENT = Schema(
    "Assignment",
    fields=(Field("topic_partitions", array(DESCRIBED_TOPIC_PARTITIONS)),),
)

DESCRIBED_CONSUMER_MEMBER = Schema(
    "Member",
    fields=(
        Field("member_id", STRING),
        Field("instance_id", NULLABLE_STRING, default=None),
        Field("rack_id", NULLABLE_STRING, default=None),
        Field("member_epoch", INT32),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("subscribed_topic_names", array(STRING)),
        Field("subscribed_topic_regex", NULLABLE_STRING, default=None),
        Field("assignment", DESCRIBED_ASSIGNMENT),
        Field("target_assignment", DESCRIBED_ASSIGNMENT),
        Field("member_type", INT8, since=1, default=-1),
    ),
)

DESCRIBED_CONSUMER_GROUP = Schema(
    "DescribedGroup",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("group_epoch", INT32),
        Field("assignment_epoch", INT32),
        Field("assignor_name", STRING),
        Field("members", array(DESCRIBED_CONSUMER_MEMBER)),
        Field("authorized_operations", INT32, default=-2147483648),
    ),
)

CONSUMER_GROUP_DESCRIBE_RESPONSE = Schema(
    "ConsumerGroupDescribeResponse",
    api_key=69,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("groups", array(DESCRIBED_CONSUMER_GROUP)),
    ),
)
