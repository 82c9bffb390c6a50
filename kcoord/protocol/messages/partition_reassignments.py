"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), v0, flexible in every version
(KIP-455); AlterPartitionReassignments v1 adds allow_replication_factor_change (KIP-860, Kafka 4.1; from
Kafka 4.3's AlterPartitionReassignments*.json).

Fields from apache/kafka clients/src/main/resources/common/message/
{Alter,List}PartitionReassignments{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, STRING

REASSIGNABLE_PARTITION = Schema(
    "ReassignablePartition",
    fields=(
        Field("partition_index", INT32),
        # null: cancel the partition's pending reassignment
        Field("replicas", array(INT32), nullable_since=0, default=None),
    ),
)

REASSIGNABLE_TOPIC = Schema(
    "ReassignableTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(REASSIGNABLE_PARTITION)),
    ),
)

REASSIGNABLE_PARTITION_RESPONSE = Schema(
    "ReassignablePartitionResponse",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

REASSIGNABLE_TOPIC_RESPONSE = Schema(
    "ReassignableTopicResponse",
    fields=(
        Field("name", STRING),
        Field("partitions", array(REASSIGNABLE_PARTITION_RESPONSE)),
    ),
)

ALTER_PARTITION_REASSIGNMENTS_REQUEST = Schema(
    "AlterPartitionReassignmentsRequest",
    api_key=45,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("timeout_ms", INT32, default=60000),
        Field("allow_replication_factor_change", BOOLEAN, since=1, default=True),
        Field("topics", array(REASSIGNABLE_TOPIC)),
    ),
)

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Schema(
    "AlterPartitionReassignmentsResponse",
    api_key=45,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("allow_replication_factor_change", BOOLEAN, since=1, default=True),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("responses", array(REASSIGNABLE_TOPIC_RESPONSE)),
    ),
)

LIST_PARTITION_REASSIGNMENTS_TOPICS = Schema(
    "ListPartitionReassignmentsTopics",
    fields=(
        Field("name", STRING),
        Field("partition_indexes", array(INT32)),
    ),
)

ONGOING_PARTITION_REASSIGNMENT = Schema(
    "OngoingPartitionReassignment",
    fields=(
        Field("partition_index", INT32),
        Field("replicas", array(INT32)),
        Field("adding_replicas", array(INT32)),
        Field("removing_replicas", array(INT32)),
    ),
)

ONGOING_TOPIC_REASSIGNMENT = Schema(
    "OngoingTopicReassignment",
    fields=(
        Field("name", STRING),
        Field("partitions", array(ONGOING_PARTITION_REASSIGNMENT)),
    ),
)

LIST_PARTITION_REASSIGNMENTS_REQUEST = Schema(
    "ListPartitionReassignmentsRequest",
    api_key=46,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("timeout_ms", INT32, default=60000),
        # null: every ongoing reassignment
        Field("topics", array(LIST_PARTITION_REASSIGNMENTS_TOPICS), nullable_since=0, default=None),
    ),
)

LIST_PARTITION_REASSIGNMENTS_RESPONSE = Schema(
    "ListPartitionReassignmentsResponse",
    api_key=46,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("topics", array(ONGOING_TOPIC_REASSIGNMENT)),
    ),
)
