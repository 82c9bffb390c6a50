"""DeleteRecords (21), v0-2, flexible 2+ (v1 is v0 with throttling semantics only).

Fields from apache/kafka clients/src/main/resources/common/message/DeleteRecords{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, STRING

DELETE_RECORDS_PARTITION = Schema(
    "DeleteRecordsPartition",
    fields=(
        Field("partition_index", INT32),
        Field("offset", INT64),
    ),
)

DELETE_RECORDS_TOPIC = Schema(
    "DeleteRecordsTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(DELETE_RECORDS_PARTITION)),
    ),
)

DELETE_RECORDS_PARTITION_RESULT = Schema(
    "DeleteRecordsPartitionResult",
    fields=(
        Field("partition_index", INT32),
        Field("low_watermark", INT64),
        Field("error_code", INT16),
    ),
)

DELETE_RECORDS_TOPIC_RESULT = Schema(
    "DeleteRecordsTopicResult",
    fields=(
        Field("name", STRING),
        Field("partitions", array(DELETE_RECORDS_PARTITION_RESULT)),
    ),
)

DELETE_RECORDS_REQUEST = Schema(
    "DeleteRecordsRequest",
    api_key=21,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("topics", array(DELETE_RECORDS_TOPIC)),
        Field("timeout_ms", INT32),
    ),
)

DELETE_RECORDS_RESPONSE = Schema(
    "DeleteRecordsResponse",
    api_key=21,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", array(DELETE_RECORDS_TOPIC_RESULT)),
    ),
)
