"""AlterReplicaLogDirs (34), v1-2, flexible 2+: move replicas to another log directory of the broker
(KIP-113). v1: responses before throttling; v2 flexible. Kafka 4 removed v0 (KIP-896).
Fields from Kafka 4.3's clients/src/main/resources/common/message/AlterReplicaLogDirs*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, STRING

ALTER_REPLICA_LOG_DIR_TOPIC = Schema(
    "AlterReplicaLogDirTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(INT32)),
    ),
)

ALTER_REPLICA_LOG_DIR = Schema(
    "AlterReplicaLogDir",
    fields=(
        Field("path", STRING),
        Field("topics", array(ALTER_REPLICA_LOG_DIR_TOPIC)),
    ),
)

ALTER_REPLICA_LOG_DIR_PARTITION_RESULT = Schema(
    "AlterReplicaLogDirPartitionResult",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ),
)

ALTER_REPLICA_LOG_DIR_TOPIC_RESULT = Schema(
    "AlterReplicaLogDirTopicResult",
    fields=(
        Field("topic_name", STRING),
        Field("partitions", array(ALTER_REPLICA_LOG_DIR_PARTITION_RESULT)),
    ),
)

ALTER_REPLICA_LOG_DIRS_REQUEST = Schema(
    "AlterReplicaLogDirsRequest",
    api_key=34,
    versions=range(1, 3),
    flexible_since=2,
    fields=(Field("dirs", array(ALTER_REPLICA_LOG_DIR)),),
)

ALTER_REPLICA_LOG_DIRS_RESPONSE = Schema(
    "AlterReplicaLogDirsResponse",
    api_key=34,
    versions=range(1, 3),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("results", array(ALTER_REPLICA_LOG_DIR_TOPIC_RESULT)),
    ),
)
