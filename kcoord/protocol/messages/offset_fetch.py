"""OffsetFetch (9), v0-10, flexible 6+.

v2 null topics = all partitions, and a top-level error_code; v5 committed_leader_epoch; v7
require_stable (KIP-447); v8 batches groups (KIP-709): the single-group fields end at v7;
v9 member_id / member_epoch (KIP-848); v10 names topics by id instead of by name (KIP-848; Kafka
4.3's OffsetFetch*.json).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, NULLABLE_STRING, STRING, UUID

OFFSET_FETCH_REQUEST_TOPIC = Schema(
    "OffsetFetchRequestTopic",
    fields=(
        Field("name", STRING, until=7),
        Field("partition_indexes", array(INT32), until=7),
    ),
)

OFFSET_FETCH_REQUEST_TOPICS = Schema(
    "OffsetFetchRequestTopics",
    fields=(
        Field("name", STRING, since=8, until=9),
        Field("topic_id", UUID, since=10),
        Field("partition_indexes", array(INT32), since=8),
    ),
)

OFFSET_FETCH_REQUEST_GROUP = Schema(
    "OffsetFetchRequestGroup",
    fields=(
        Field("group_id", STRING, since=8),
        Field("member_id", NULLABLE_STRING, since=9, default=None),
        Field("member_epoch", INT32, since=9, default=-1),
        Field("topics", array(OFFSET_FETCH_REQUEST_TOPICS), since=8, nullable_since=8),
    ),
)

OFFSET_FETCH_RESPONSE_PARTITION = Schema(
    "OffsetFetchResponsePartition",
    fields=(
        Field("partition_index", INT32, until=7),
        Field("committed_offset", INT64, until=7),
        Field("committed_leader_epoch", INT32, since=5, until=7, default=-1),
        Field("metadata", NULLABLE_STRING, until=7),
        Field("error_code", INT16, until=7),
    ),
)

OFFSET_FETCH_RESPONSE_TOPIC = Schema(
    "OffsetFetchResponseTopic",
    fields=(
        Field("name", STRING, until=7),
        Field("partitions", array(OFFSET_FETCH_RESPONSE_PARTITION), until=7),
    ),
)

OFFSET_FETCH_RESPONSE_PARTITIONS = Schema(
    "OffsetFetchResponsePartitions",
    fields=(
        Field("partition_index", INT32, since=8),
        Field("committed_offset", INT64, since=8),
        Field("committed_leader_epoch", INT32, since=8, default=-1),
        Field("metadata", NULLABLE_STRING, since=8),
        Field("error_code", INT16, since=8),
    ),
)

OFFSET_FETCH_RESPONSE_TOPICS = Schema(
    "OffsetFetchResponseTopics",
    fields=(
        Field("name", STRING, since=8, until=9),
        Field("topic_id", UUID, since=10),
        Field("partitions", array(OFFSET_FETCH_RESPONSE_PARTITIONS), since=8),
    ),
)

OFFSET_FETCH_RESPONSE_GROUP = Schema(
    "OffsetFetchResponseGroup",
    fields=(
        Field("group_id", STRING, since=8),
        Field("topics", array(OFFSET_FETCH_RESPONSE_TOPICS), since=8),
        Field("error_code", INT16, since=8, default=0),
    ),
)

OFFSET_FETCH_REQUEST = Schema(
    "OffsetFetchRequest",
    api_key=9,
    versions=range(0, 11),
    flexible_since=6,
    fields=(
        Field("group_id", STRING, until=7),
        Field("topics", array(OFFSET_FETCH_REQUEST_TOPIC), until=7, nullable_since=2),
        Field("groups", array(OFFSET_FETCH_REQUEST_GROUP), since=8),
        Field("require_stable", BOOLEAN, since=7, default=False),
    ),
)

OFFSET_FETCH_RESPONSE = Schema(
    "OffsetFetchResponse",
    api_key=9,
    versions=range(0, 11),
    flexible_since=6,
    fields=(
        Field("throttle_time_ms", INT32, since=3),
        Field("topics", array(OFFSET_FETCH_RESPONSE_TOPIC), until=7),
        Field("error_code", INT16, since=2, until=7, default=0),
        Field("groups", array(OFFSET_FETCH_RESPONSE_GROUP), since=8),
    ),
)
