"""OffsetCommit (8), v0-10, flexible 8+.

v1 generation/member and a per-partition commit_timestamp (v1 only); v2-4 retention_time_ms;
v6 committed_leader_epoch; v7 group_instance_id; v9 same wire as v8, generation_id_or_member_epoch
may carry a KIP-848 member epoch ("GenerationId" in older Kafka schemas); v10 names topics by id
instead of by name (KIP-848; Kafka 4.3's OffsetCommit*.json).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING, UUID

OFFSET_COMMIT_REQUEST_PARTITION = Schema(
    "OffsetCommitRequestPartition",
    fields=(
        Field("partition_index", INT32),
        Field("committed_offset", INT64),
        Field("committed_leader_epoch", INT32, since=6, default=-1),
        Field("commit_timestamp", INT64, since=1, until=1, default=-1),
        Field("committed_metadata", NULLABLE_STRING),
    ),
)

OFFSET_COMMIT_REQUEST_TOPIC = Schema(
    "OffsetCommitRequestTopic",
    fields=(
        Field("name", STRING, until=9),
        Field("topic_id", UUID, since=10),
        Field("partitions", array(OFFSET_COMMIT_REQUEST_PARTITION)),
    ),
)

OFFSET_COMMIT_RESPONSE_PARTITION = Schema(
    "OffsetCommitResponsePartition",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ),
)

OFFSET_COMMIT_RESPONSE_TOPIC = Schema(
    "OffsetCommitResponseTopic",
    fields=(
        Field("name", STRING, until=9),
        Field("topic_id", UUID, since=10),
        Field("partitions", array(OFFSET_COMMIT_RESPONSE_PARTITION)),
    ),
)

OFFSET_COMMIT_REQUEST = Schema(
    "OffsetCommitRequest",
    api_key=8,
    versions=range(0, 11),
    flexible_since=8,
    fields=(
        Field("group_id", STRING),
        Field("generation_id_or_member_epoch", INT32, since=1, default=-1),
        Field("member_id", STRING, since=1),
        Field("group_instance_id", NULLABLE_STRING, since=7, default=None),
        Field("retention_time_ms", INT64, since=2, until=4, default=-1),
        Field("topics", array(OFFSET_COMMIT_REQUEST_TOPIC)),
    ),
)

OFFSET_COMMIT_RESPONSE = Schema(
    "OffsetCommitResponse",
    api_key=8,
    versions=range(0, 11),
    flexible_since=8,
    fields=(
        Field("throttle_time_ms", INT32, since=3),
        Field("topics", array(OFFSET_COMMIT_RESPONSE_TOPIC)),
    ),
)
