"""CreateTopics (19), v0-7, flexible 5+.

v1 validate_only and error_message; v2 throttle_time_ms; v4 defaults (-1) for partitions and
replication factor; v5 returns the topic configs (KIP-525); v7 topic_id.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING, UUID

CREATABLE_REPLICA_ASSIGNMENT = Schema(
    "CreatableReplicaAssignment",
    fields=(
        Field("partition_index", INT32),
        Field("broker_ids", array(INT32)),
    ),
)

CREATABLE_TOPIC_CONFIG = Schema(
    "CreatableTopicConfig",
    fields=(
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
    ),
)

CREATABLE_TOPIC = Schema(
    "CreatableTopic",
    fields=(
        Field("name", STRING),
        Field("num_partitions", INT32),
        Field("replication_factor", INT16),
        Field("assignments", array(CREATABLE_REPLICA_ASSIGNMENT)),
        Field("configs", array(CREATABLE_TOPIC_CONFIG)),
    ),
)

CREATABLE_TOPIC_CONFIGS = Schema(
    "CreatableTopicConfigs",
    fields=(
        Field("name", STRING, since=5),
        Field("value", NULLABLE_STRING, since=5),
        Field("read_only", BOOLEAN, since=5),
        Field("config_source", INT8, since=5, default=-1),
        Field("is_sensitive", BOOLEAN, since=5),
    ),
)

CREATABLE_TOPIC_RESULT = Schema(
    "CreatableTopicResult",
    fields=(
        Field("name", STRING),
        Field("topic_id", UUID, since=7),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, since=1),
        Field("topic_config_error_code", INT16, since=5, tag=0, tagged_since=5),
        Field("num_partitions", INT32, since=5, default=-1),
        Field("replication_factor", INT16, since=5, default=-1),
        Field("configs", array(CREATABLE_TOPIC_CONFIGS), since=5, nullable_since=5),
    ),
)

CREATE_TOPICS_REQUEST = Schema(
    "CreateTopicsRequest",
    api_key=19,
    versions=range(0, 8),
    flexible_since=5,
    fields=(
        Field("topics", array(CREATABLE_TOPIC)),
        Field("timeout_ms", INT32, default=60000),
        Field("validate_only", BOOLEAN, since=1, default=False),
    ),
)

CREATE_TOPICS_RESPONSE = Schema(
    "CreateTopicsResponse",
    api_key=19,
    versions=range(0, 8),
    flexible_since=5,
    fields=(
        Field("throttle_time_ms", INT32, since=2),
        Field("topics", array(CREATABLE_TOPIC_RESULT)),
    ),
)
