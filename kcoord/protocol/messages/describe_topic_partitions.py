"""DescribeTopicPartitions (75), v0, flexible (KIP-966): Metadata's topic part, paged by a partition
limit and a cursor (topic name, partition index), with each partition's eligible leader replicas.
Fields from Kafka 4.3's clients/src/main/resources/common/message/DescribeTopicPartitions*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING, UUID

TOPIC_REQUEST = Schema("TopicRequest", fields=(Field("name", STRING),))

CURSOR = Schema(
    "Cursor",
    fields=(
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    ),
)

DESCRIBE_TOPIC_PARTITIONS_RESPONSE_PARTITION = Schema(
    "DescribeTopicPartitionsResponsePartition",
    fields=(
        Field("error_code", INT16),
        Field("partition_index", INT32),
        Field("leader_id", INT32),
        Field("leader_epoch", INT32, default=-1),
        Field("replica_nodes", array(INT32)),
        Field("isr_nodes", array(INT32)),
        Field("eligible_leader_replicas", array(INT32), nullable_since=0, default=None),
        Field("last_known_elr", array(INT32), nullable_since=0, default=None),
        Field("offline_replicas", array(INT32)),
    ),
)

DESCRIBE_TOPIC_PARTITIONS_RESPONSE_TOPIC = Schema(
    "DescribeTopicPartitionsResponseTopic",
    fields=(
        Field("error_code", INT16),
        Field("name", NULLABLE_STRING),
        Field("topic_id", UUID),
        Field("is_internal", BOOLEAN, default=False),
        Field("partitions", array(DESCRIBE_TOPIC_PARTITIONS_RESPONSE_PARTITION)),
        Field("topic_authorized_operations", INT32, default=-2147483648),
    ),
)

DESCRIBE_TOPIC_PARTITIONS_REQUEST = Schema(
    "DescribeTopicPartitionsRequest",
    api_key=75,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("topics", array(TOPIC_REQUEST)),
        Field("response_partition_limit", INT32, default=2000),
        Field("cursor", CURSOR, nullable_since=0, default=None),
    ),
)

DESCRIBE_TOPIC_PARTITIONS_RESPONSE = Schema(
    "DescribeTopicPartitionsResponse",
    api_key=75,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", array(DESCRIBE_TOPIC_PARTITIONS_RESPONSE_TOPIC)),
        Field("next_cursor", CURSOR, nullable_since=0, default=None),
    ),
)
