"""DescribeQuorum (55), v0-2, flexible in every version: the KRaft metadata quorum (`__cluster_metadata`
partition 0), as `kafka-metadata-quorum.sh describe --status|--replication` reads it. v1: each
replica's last fetch and last caught-up timestamps (KIP-836); v2: error messages, replica directory
ids and the voters' endpoints (`nodes`, KIP-853).
Fields from Kafka 4.3's clients/src/main/resources/common/message/DescribeQuorum*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING, UINT16, UUID

REQUEST_PARTITION = Schema("PartitionData", fields=(Field("partition_index", INT32),))

REQUEST_TOPIC = Schema(
    "TopicData",
    fields=(
        Field("topic_name", STRING),
        Field("partitions", array(REQUEST_PARTITION)),
    ),
)

REPLICA_STATE = Schema(
    "ReplicaState",
    fields=(
        Field("replica_id", INT32),
        Field("replica_directory_id", UUID, since=2),
        Field("log_end_offset", INT64),
        Field("last_fetch_timestamp", INT64, since=1, default=-1),
        Field("last_caught_up_timestamp", INT64, since=1, default=-1),
    ),
)

RESPONSE_PARTITION = Schema(
    "PartitionData",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, since=2, default=None),
        Field("leader_id", INT32),
        Field("leader_epoch", INT32),
        Field("high_watermark", INT64),
        Field("current_voters", array(REPLICA_STATE)),
        Field("observers", array(REPLICA_STATE)),
    ),
)

RESPONSE_TOPIC = Schema(
    "TopicData",
    fields=(
        Field("topic_name", STRING),
        Field("partitions", array(RESPONSE_PARTITION)),
    ),
)

LISTENER = Schema(
    "Listener",
    fields=(
        Field("name", STRING, since=2),
        Field("host", STRING, since=2),
        Field("port", UINT16, since=2),
    ),
)

NODE = Schema(
    "Node",
    fields=(
        Field("node_id", INT32, since=2),
        Field("listeners", array(LISTENER), since=2),
    ),
)

DESCRIBE_QUORUM_REQUEST = Schema(
    "DescribeQuorumRequest",
    api_key=55,
    versions=range(0, 3),
    flexible_since=0,
    fields=(Field("topics", array(REQUEST_TOPIC)),),
)

DESCRIBE_QUORUM_RESPONSE = Schema(
    "DescribeQuorumResponse",
    api_key=55,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, since=2, default=None),
        Field("topics", array(RESPONSE_TOPIC)),
        Field("nodes", array(NODE), since=2),
    ),
)
