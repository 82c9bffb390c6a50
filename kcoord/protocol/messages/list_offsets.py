"""ListOffsets (2), v0-11, flexible 6+.

v0 only: max_num_offsets and old_style_offsets; v2 isolation_level; v4 leader epochs; v7 timestamp -3
(max timestamp); v8 -4 (local log start); v9 -5 (last tiered); v10 timeout_ms for remote reads (KIP-1075);
v11 -6 (earliest pending upload, KIP-1023). v10-11 from Kafka 4.3's ListOffsets*.json.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, INT64, STRING

LIST_OFFSETS_PARTITION = Schema(
    "ListOffsetsPartition",
    fields=(
        Field("partition_index", INT32),
        Field("current_leader_epoch", INT32, since=4, default=-1),
        Field("timestamp", INT64),
        Field("max_num_offsets", INT32, until=0, default=1),
    ),
)

LIST_OFFSETS_TOPIC = Schema(
    "ListOffsetsTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(LIST_OFFSETS_PARTITION)),
    ),
)

LIST_OFFSETS_PARTITION_RESPONSE = Schema(
    "ListOffsetsPartitionResponse",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("old_style_offsets", array(INT64), until=0),
        Field("timestamp", INT64, since=1, default=-1),
        Field("offset", INT64, since=1, default=-1),
        Field("leader_epoch", INT32, since=4, default=-1),
    ),
)

LIST_OFFSETS_TOPIC_RESPONSE = Schema(
    "ListOffsetsTopicResponse",
    fields=(
        Field("name", STRING),
        Field("partitions", array(LIST_OFFSETS_PARTITION_RESPONSE)),
    ),
)

LIST_OFFSETS_REQUEST = Schema(
    "ListOffsetsRequest",
    api_key=2,
    versions=range(0, 12),
    flexible_since=6,
    fields=(
        Field("replica_id", INT32, default=-1),  # -1 = a consumer (ListOffsetsRequest.CONSUMER_REPLICA_ID)
        Field("isolation_level", INT8, since=2, default=0),  # 0 READ_UNCOMMITTED, 1 READ_COMMITTED
        Field("topics", array(LIST_OFFSETS_TOPIC)),
        Field("timeout_ms", INT32, since=10),
    ),
)

LIST_OFFSETS_RESPONSE = Schema(
    "ListOffsetsResponse",
    api_key=2,
    versions=range(0, 12),
    flexible_since=6,
    fields=(
        Field("throttle_time_ms", INT32, since=2),
        Field("topics", array(LIST_OFFSETS_TOPIC_RESPONSE)),
    ),
)
