"""OffsetForLeaderEpoch (23), v2-4, flexible 4+.

A consumer asks for the end offset of the leader epoch of its position after a leader change, to detect
log truncation (KIP-320). v2 current_leader_epoch (fencing); v3 replica_id (-1 consumer, -2 default);
v4 flexible. Kafka 4 removed v0-1 (KIP-896).
Fields from Kafka 4.3's clients/src/main/resources/common/message/OffsetForLeaderEpoch*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, STRING

OFFSET_FOR_LEADER_PARTITION = Schema(
    "OffsetForLeaderPartition",
    fields=(
        Field("partition", INT32),
        Field("current_leader_epoch", INT32, since=2, default=-1),
        Field("leader_epoch", INT32),
    ),
)

OFFSET_FOR_LEADER_TOPIC = Schema(
    "OffsetForLeaderTopic",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(OFFSET_FOR_LEADER_PARTITION)),
    ),
)

EPOCH_END_OFFSET = Schema(
    "EpochEndOffset",
    fields=(
        Field("error_code", INT16),
        Field("partition", INT32),
        Field("leader_epoch", INT32, since=1, default=-1),
        Field("end_offset", INT64, default=-1),
    ),
)

OFFSET_FOR_LEADER_TOPIC_RESULT = Schema(
    "OffsetForLeaderTopicResult",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(EPOCH_END_OFFSET)),
    ),
)

OFFSET_FOR_LEADER_EPOCH_REQUEST = Schema(
    "OffsetForLeaderEpochRequest",
    api_key=23,
    versions=range(2, 5),
    flexible_since=4,
    fields=(
        Field("replica_id", INT32, since=3, default=-2),
        Field("topics", array(OFFSET_FOR_LEADER_TOPIC)),
    ),
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = Schema(
    "OffsetForLeaderEpochResponse",
    api_key=23,
    versions=range(2, 5),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, since=2),
        Field("topics", array(OFFSET_FOR_LEADER_TOPIC_RESULT)),
    ),
)
