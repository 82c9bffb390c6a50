"""The share-group offset admin APIs (KIP-932), flexible in every version:

- DescribeShareGroupOffsets (90), v0-1; v1 adds each partition's `lag` (KIP-1226, Kafka 4.2).
- AlterShareGroupOffsets (91), v0.
- DeleteShareGroupOffsets (92), v0.

Fields as the Kafka 4.3.1 jar's `*Data.SCHEMAS` define them. Two differ from older copies of the JSON
files: AlterShareGroupOffsetsResponse carries a top-level error_code/error_message, and
DeleteShareGroupOffsetsResponse answers per topic (no partitions array).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING, UUID

_DESCRIBE_REQUEST_TOPIC = Schema(
    "DescribeShareGroupOffsetsRequestTopic",
    fields=(Field("topic_name", STRING), Field("partitions", array(INT32))),
)

_DESCRIBE_REQUEST_GROUP = Schema(
    "DescribeShareGroupOffsetsRequestGroup",
    fields=(
        Field("group_id", STRING),
        # null: every topic-partition the group has state for
        Field("topics", array(_DESCRIBE_REQUEST_TOPIC), nullable_since=0, default=None),
    ),
)

DESCRIBE_SHARE_GROUP_OFFSETS_REQUEST = Schema(
    "DescribeShareGroupOffsetsRequest",
    api_key=90,
    versions=range(0, 2),
    flexible_since=0,
    fields=(Field("groups", array(_DESCRIBE_REQUEST_GROUP)),),
)

_DESCRIBE_RESPONSE_PARTITION = Schema(
    "DescribeShareGroupOffsetsResponsePartition",
    fields=(
        Field("partition_index", INT32),
        Field("start_offset", INT64),
        Field("leader_epoch", INT32),
        Field("lag", INT64, since=1, default=-1),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

_DESCRIBE_RESPONSE_TOPIC = Schema(
    "DescribeShareGroupOffsetsResponseTopic",
    fields=(
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("partitions", array(_DESCRIBE_RESPONSE_PARTITION)),
    ),
)

_DESCRIBE_RESPONSE_GROUP = Schema(
    "DescribeShareGroupOffsetsResponseGroup",
    fields=(
        Field("group_id", STRING),
        Field("topics", array(_DESCRIBE_RESPONSE_TOPIC)),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE = Schema(
    "DescribeShareGroupOffsetsResponse",
    api_key=90,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("groups", array(_DESCRIBE_RESPONSE_GROUP)),
    ),
)

_ALTER_REQUEST_PARTITION = Schema(
    "AlterShareGroupOffsetsRequestPartition",
    fields=(Field("partition_index", INT32), Field("start_offset", INT64)),
)

_ALTER_REQUEST_TOPIC = Schema(
    "AlterShareGroupOffsetsRequestTopic",
    fields=(Field("topic_name", STRING), Field("partitions", array(_ALTER_REQUEST_PARTITION))),
)

ALTER_SHARE_GROUP_OFFSETS_REQUEST = Schema(
    "AlterShareGroupOffsetsRequest",
    api_key=91,
    versions=range(0, 1),
    flexible_since=0,
    fields=(Field("group_id", STRING), Field("topics", array(_ALTER_REQUEST_TOPIC))),
)

_ALTER_RESPONSE_PARTITION = Schema(
    "AlterShareGroupOffsetsResponsePartition",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

_ALTER_RESPONSE_TOPIC = Schema(
    "AlterShareGroupOffsetsResponseTopic",
    fields=(
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("partitions", array(_ALTER_RESPONSE_PARTITION)),
    ),
)

ALTER_SHARE_GROUP_OFFSETS_RESPONSE = Schema(
    "AlterShareGroupOffsetsResponse",
    api_key=91,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("responses", array(_ALTER_RESPONSE_TOPIC)),
    ),
)

_DELETE_REQUEST_TOPIC = Schema("DeleteShareGroupOffsetsRequestTopic", fields=(Field("topic_name", STRING),))

DELETE_SHARE_GROUP_OFFSETS_REQUEST = Schema(
    "DeleteShareGroupOffsetsRequest",
    api_key=92,
    versions=range(0, 1),
    flexible_since=0,
    fields=(Field("group_id", STRING), Field("topics", array(_DELETE_REQUEST_TOPIC))),
)

_DELETE_RESPONSE_TOPIC = Schema(
    "DeleteShareGroupOffsetsResponseTopic",
    fields=(
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

DELETE_SHARE_GROUP_OFFSETS_RESPONSE = Schema(
    "DeleteShareGroupOffsetsResponse",
    api_key=92,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("responses", array(_DELETE_RESPONSE_TOPIC)),
    ),
)
