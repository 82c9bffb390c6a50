"""DescribeProducers (61), v0, flexible in every version (KIP-664).

The producer state a partition leader holds: each active producer's epoch, last sequence and
timestamp, coordinator epoch and the first offset of its open transaction (-1: none).
Note the producer_epoch is an INT32 here (an INT16 everywhere else).
Fields from apache/kafka clients/src/main/resources/common/message/DescribeProducers*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING

DESCRIBE_PRODUCERS_TOPIC_REQUEST = Schema(
    "TopicRequest",
    fields=(
        Field("name", STRING),
        Field("partition_indexes", array(INT32)),
    ),
)

PRODUCER_STATE = Schema(
    "ProducerState",
    fields=(
        Field("producer_id", INT64),
        Field("producer_epoch", INT32),
        Field("last_sequence", INT32, default=-1),
        Field("last_timestamp", INT64, default=-1),
        Field("coordinator_epoch", INT32),
        Field("current_txn_start_offset", INT64, default=-1),
    ),
)

DESCRIBE_PRODUCERS_PARTITION_RESPONSE = Schema(
    "PartitionResponse",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("active_producers", array(PRODUCER_STATE)),
    ),
)

DESCRIBE_PRODUCERS_TOPIC_RESPONSE = Schema(
    "TopicResponse",
    fields=(
        Field("name", STRING),
        Field("partitions", array(DESCRIBE_PRODUCERS_PARTITION_RESPONSE)),
    ),
)

DESCRIBE_PRODUCERS_REQUEST = Schema(
    "DescribeProducersRequest",
    api_key=61,
    versions=range(0, 1),
    flexible_since=0,
    fields=(Field("topics", array(DESCRIBE_PRODUCERS_TOPIC_REQUEST)),),
)

DESCRIBE_PRODUCERS_RESPONSE = Schema(
    "DescribeProducersResponse",
    api_key=61,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", array(DESCRIBE_PRODUCERS_TOPIC_RESPONSE)),
    ),
)
