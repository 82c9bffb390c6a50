"""CreatePartitions (37), v0-3, flexible 2+.

Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING

CREATE_PARTITIONS_ASSIGNMENT = Schema(
    "CreatePartitionsAssignment",
    fields=(Field("broker_ids", array(INT32)),),
)

CREATE_PARTITIONS_TOPIC = Schema(
    "CreatePartitionsTopic",
    fields=(
        Field("name", STRING),
        Field("count", INT32),
        Field("assignments", array(CREATE_PARTITIONS_ASSIGNMENT), nullable_since=0),
    ),
)

CREATE_PARTITIONS_TOPIC_RESULT = Schema(
    "CreatePartitionsTopicResult",
    fields=(
        Field("name", STRING),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

CREATE_PARTITIONS_REQUEST = Schema(
    "CreatePartitionsRequest",
    api_key=37,
    versions=range(0, 4),
    flexible_since=2,
    fields=(
        Field("topics", array(CREATE_PARTITIONS_TOPIC)),
        Field("timeout_ms", INT32),
        Field("validate_only", BOOLEAN),
    ),
)

CREATE_PARTITIONS_RESPONSE = Schema(
    "CreatePartitionsResponse",
    api_key=37,
    versions=range(0, 4),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("results", array(CREATE_PARTITIONS_TOPIC_RESULT)),
    ),
)
