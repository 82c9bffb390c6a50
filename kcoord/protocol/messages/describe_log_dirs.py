"""DescribeLogDirs (35), v0-5, flexible 2+. v1: throttling semantics only; v3: top-level error code;
v4: total_bytes / usable_bytes of the volume (KIP-827); v5: is_cordoned (KIP-1066, Kafka 4.3's
DescribeLogDirsResponse.json). Kafka 4 serves v1-5 (v0 removed by KIP-896); v0 stays defined, not served.

Fields from apache/kafka clients/src/main/resources/common/message/DescribeLogDirs{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, STRING

DESCRIBABLE_LOG_DIR_TOPIC = Schema(
    "DescribableLogDirTopic",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(INT32)),
    ),
)

DESCRIBE_LOG_DIRS_PARTITION = Schema(
    "DescribeLogDirsPartition",
    fields=(
        Field("partition_index", INT32),
        Field("partition_size", INT64),
        Field("offset_lag", INT64),
        Field("is_future_key", BOOLEAN, default=False),
    ),
)

DESCRIBE_LOG_DIRS_TOPIC = Schema(
    "DescribeLogDirsTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(DESCRIBE_LOG_DIRS_PARTITION)),
    ),
)

DESCRIBE_LOG_DIRS_RESULT = Schema(
    "DescribeLogDirsResult",
    fields=(
        Field("error_code", INT16, default=0),
        Field("log_dir", STRING),
        Field("topics", array(DESCRIBE_LOG_DIRS_TOPIC)),
        Field("total_bytes", INT64, since=4, default=-1),
        Field("usable_bytes", INT64, since=4, default=-1),
        Field("is_cordoned", BOOLEAN, since=5, default=False),
    ),
)

DESCRIBE_LOG_DIRS_REQUEST = Schema(
    "DescribeLogDirsRequest",
    api_key=35,
    versions=range(0, 6),
    flexible_since=2,
    # null: every partition this broker has a log of
    fields=(Field("topics", array(DESCRIBABLE_LOG_DIR_TOPIC), nullable_since=0, default=None),),
)

DESCRIBE_LOG_DIRS_RESPONSE = Schema(
    "DescribeLogDirsResponse",
    api_key=35,
    versions=range(0, 6),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, since=3, default=0),
        Field("results", array(DESCRIBE_LOG_DIRS_RESULT)),
    ),
)
