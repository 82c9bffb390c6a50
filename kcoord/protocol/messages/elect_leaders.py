"""ElectLeaders (43), v0-2, flexible 2+. v1: election_type (0 preferred, 1 unclean, KIP-460) and a
top-level error code.

Fields from apache/kafka clients/src/main/resources/common/message/ElectLeaders{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, NULLABLE_STRING, STRING

ELECT_LEADERS_TOPIC_PARTITIONS = Schema(
    "TopicPartitions",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(INT32)),
    ),
)

ELECT_LEADERS_PARTITION_RESULT = Schema(
    "PartitionResult",
    fields=(
        Field("partition_id", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

ELECT_LEADERS_REPLICA_ELECTION_RESULT = Schema(
    "ReplicaElectionResult",
    fields=(
        Field("topic", STRING),
        Field("partition_result", array(ELECT_LEADERS_PARTITION_RESULT)),
    ),
)

ELECT_LEADERS_REQUEST = Schema(
    "ElectLeadersRequest",
    api_key=43,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("election_type", INT8, since=1, default=0),
        # null: every partition of every topic
        Field("topic_partitions", array(ELECT_LEADERS_TOPIC_PARTITIONS), nullable_since=0, default=None),
        Field("timeout_ms", INT32, default=60000),
    ),
)

ELECT_LEADERS_RESPONSE = Schema(
    "ElectLeadersResponse",
    api_key=43,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, since=1, default=0),
        Field("replica_election_results", array(ELECT_LEADERS_REPLICA_ELECTION_RESULT)),
    ),
)
