"""Fetch (1), v0-18, flexible 12+.

v13+ address topics by id (KIP-516), which Metadata returns stable and durable; v14 adds an error
for tiered storage; v15 moves the replica id into a tagged ReplicaState (KIP-903); v16 adds the
tagged NodeEndpoints of the response (KIP-951); v17 the tagged replica directory id (KIP-853); v18
a follower's tagged high watermark (KIP-1166; a consumer leaves it at its default).
v3 max_bytes; v4 isolation_level, aborted transactions; v5 log_start_offset; v7 fetch sessions
(KIP-227: session_id 0 = no session); v9 current_leader_epoch; v11 rack_id, preferred_read_replica.
Fields from apache/kafka clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING, UUID

REPLICA_STATE = Schema(
    "ReplicaState",
    fields=(
        Field("replica_id", INT32, since=15, default=-1),
        Field("replica_epoch", INT64, since=15, default=-1),
    ),
)

FETCH_PARTITION = Schema(
    "FetchPartition",
    fields=(
        Field("partition", INT32),
        Field("current_leader_epoch", INT32, since=9, default=-1),
        Field("fetch_offset", INT64),
        Field("last_fetched_epoch", INT32, since=12, default=-1),
        Field("log_start_offset", INT64, since=5, default=-1),
        Field("partition_max_bytes", INT32),
        Field("replica_directory_id", UUID, since=17, tag=0, tagged_since=17),
        Field("high_watermark", INT64, since=18, tag=1, tagged_since=18, default=9223372036854775807),
    ),
)

FETCH_TOPIC = Schema(
    "FetchTopic",
    fields=(
        Field("topic", STRING, until=12),
        Field("topic_id", UUID, since=13),
        Field("partitions", array(FETCH_PARTITION)),
    ),
)

FORGOTTEN_TOPIC = Schema(
    "ForgottenTopic",
    fields=(
        Field("topic", STRING, since=7, until=12),
        Field("topic_id", UUID, since=13),
        Field("partitions", array(INT32), since=7),
    ),
)

EPOCH_END_OFFSET = Schema(
    "EpochEndOffset",
    fields=(
        Field("epoch", INT32, since=12, default=-1),
        Field("end_offset", INT64, since=12, default=-1),
    ),
)

LEADER_ID_AND_EPOCH = Schema(
    "LeaderIdAndEpoch",
    fields=(
        Field("leader_id", INT32, since=12, default=-1),
        Field("leader_epoch", INT32, since=12, default=-1),
    ),
)

SNAPSHOT_ID = Schema(
    "SnapshotId",
    fields=(
        Field("end_offset", INT64, default=-1),
        Field("epoch", INT32, default=-1),
    ),
)

ABORTED_TRANSACTION = Schema(
    "AbortedTransaction",
    fields=(
        Field("producer_id", INT64, since=4),
        Field("first_offset", INT64, since=4),
    ),
)

PARTITION_DATA = Schema(
    "PartitionData",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("high_watermark", INT64),
        Field("last_stable_offset", INT64, since=4, default=-1),
        Field("log_start_offset", INT64, since=5, default=-1),
        Field("diverging_epoch", EPOCH_END_OFFSET, since=12, tag=0, tagged_since=12),
        Field("current_leader", LEADER_ID_AND_EPOCH, since=12, tag=1, tagged_since=12),
        Field("snapshot_id", SNAPSHOT_ID, since=12, tag=2, tagged_since=12),
        Field("aborted_transactions", array(ABORTED_TRANSACTION), since=4, nullable_since=4),
        Field("preferred_read_replica", INT32, since=11, default=-1),
        Field("records", RECORDS),
    ),
)

FETCHABLE_TOPIC_RESPONSE = Schema(
    "FetchableTopicResponse",
    fields=(
        Field("topic", STRING, until=12),
        Field("topic_id", UUID, since=13),
        Field("partitions", array(PARTITION_DATA)),
    ),
)

NODE_ENDPOINT = Schema(
    "NodeEndpoint",
    fields=(
        Field("node_id", INT32, since=16),
        Field("host", STRING, since=16),
        Field("port", INT32, since=16),
        Field("rack", NULLABLE_STRING, since=16, default=None),
    ),
)

FETCH_REQUEST = Schema(
    "FetchRequest",
    api_key=1,
    versions=range(0, 19),
    flexible_since=12,
    fields=(
        Field("cluster_id", NULLABLE_STRING, since=12, default=None, tag=0, tagged_since=12),
        Field("replica_id", INT32, until=14, default=-1),
        Field("replica_state", REPLICA_STATE, since=15, tag=1, tagged_since=15),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, since=3, default=2147483647),
        Field("isolation_level", INT8, since=4, default=0),
        Field("session_id", INT32, since=7, default=0),
        Field("session_epoch", INT32, since=7, default=-1),
        Field("topics", array(FETCH_TOPIC)),
        Field("forgotten_topics_data", array(FORGOTTEN_TOPIC), since=7),
        Field("rack_id", STRING, since=11, default=""),
    ),
)

FETCH_RESPONSE = Schema(
    "FetchResponse",
    api_key=1,
    versions=range(0, 19),
    flexible_since=12,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16, since=7),
        Field("session_id", INT32, since=7, default=0),
        Field("responses", array(FETCHABLE_TOPIC_RESPONSE)),
        Field("node_endpoints", array(NODE_ENDPOINT), since=16, tag=0, tagged_since=16),
    ),
)
