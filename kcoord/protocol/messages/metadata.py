"""Metadata (3), v0-13, flexible 9+.

v0: an empty topic list means "all topics"; v1+: null means all, empty means none.
v4 allow_auto_topic_creation; v7 leader_epoch; v8 authorized operations (cluster ones removed in v11,
KIP-700); v10 topic ids; v12 topic name nullable in the response (lookup by id); v13 a top-level
error_code (KIP-1102: REBOOTSTRAP_REQUIRED), from Kafka 4.3's MetadataResponse.json.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING, UUID

METADATA_REQUEST_TOPIC = Schema(
    "MetadataRequestTopic",
    fields=(
        Field("topic_id", UUID, since=10),
        Field("name", STRING, nullable_since=10),
    ),
)

METADATA_RESPONSE_BROKER = Schema(
    "MetadataResponseBroker",
    fields=(
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", NULLABLE_STRING, since=1, default=None),
    ),
)

METADATA_RESPONSE_PARTITION = Schema(
    "MetadataResponsePartition",
    fields=(
        Field("error_code", INT16),
        Field("partition_index", INT32),
        Field("leader_id", INT32),
        Field("leader_epoch", INT32, since=7, default=-1),
        Field("replica_nodes", array(INT32)),
        Field("isr_nodes", array(INT32)),
        Field("offline_replicas", array(INT32), since=5),
    ),
)

METADATA_RESPONSE_TOPIC = Schema(
    "MetadataResponseTopic",
    fields=(
        Field("error_code", INT16),
        Field("name", STRING, nullable_since=12),
        Field("topic_id", UUID, since=10),
        Field("is_internal", BOOLEAN, since=1, default=False),
        Field("partitions", array(METADATA_RESPONSE_PARTITION)),
        Field("topic_authorized_operations", INT32, since=8, default=-2147483648),
    ),
)

METADATA_REQUEST = Schema(
    "MetadataRequest",
    api_key=3,
    versions=range(0, 14),
    flexible_since=9,
    fields=(
        Field("topics", array(METADATA_REQUEST_TOPIC), nullable_since=1),
        Field("allow_auto_topic_creation", BOOLEAN, since=4, default=True),
        Field("include_cluster_authorized_operations", BOOLEAN, since=8, until=10),
        Field("include_topic_authorized_operations", BOOLEAN, since=8),
    ),
)

METADATA_RESPONSE = Schema(
    "MetadataResponse",
    api_key=3,
    versions=range(0, 14),
    flexible_since=9,
    fields=(
        Field("throttle_time_ms", INT32, since=3),
        Field("brokers", array(METADATA_RESPONSE_BROKER)),
        Field("cluster_id", NULLABLE_STRING, since=2, default=None),
        Field("controller_id", INT32, since=1, default=-1),
        Field("topics", array(METADATA_RESPONSE_TOPIC)),
        Field("cluster_authorized_operations", INT32, since=8, until=10, default=-2147483648),
        Field("error_code", INT16, since=13, default=0),
    ),
)
