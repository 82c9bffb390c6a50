"""Produce (0), v0-13, flexible 9+.

v3 transactional_id; v8 record_errors / error_message; v10 tagged current_leader and node_endpoints
(KIP-951); v11 = v10 on the wire (may answer TRANSACTION_ABORTABLE); v12 = v11 on the wire (Kafka
4.0, KIP-890 part 2): a transactional batch of v12 adds its partition to the transaction itself,
which a client sends only when the broker finalizes `transaction.version` >= 2.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json; v12 from Kafka 4.0's
ProduceRequest/ProduceResponse.json (no field added); v13 (Kafka 4.1, KIP-516) names topics by id
instead of by name (Kafka 4.3's ProduceRequest/ProduceResponse.json).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING, UUID

PARTITION_PRODUCE_DATA = Schema(
    "PartitionProduceData",
    fields=(
        Field("index", INT32),
        Field("records", RECORDS),
    ),
)

TOPIC_PRODUCE_DATA = Schema(
    "TopicProduceData",
    fields=(
        Field("name", STRING, until=12),
        Field("topic_id", UUID, since=13),
        Field("partition_data", array(PARTITION_PRODUCE_DATA)),
    ),
)

BATCH_INDEX_AND_ERROR_MESSAGE = Schema(
    "BatchIndexAndErrorMessage",
    fields=(
        Field("batch_index", INT32, since=8),
        Field("batch_index_error_message", NULLABLE_STRING, since=8, default=None),
    ),
)

LEADER_ID_AND_EPOCH = Schema(
    "LeaderIdAndEpoch",
    fields=(
        Field("leader_id", INT32, since=10, default=-1),
        Field("leader_epoch", INT32, since=10, default=-1),
    ),
)

PARTITION_PRODUCE_RESPONSE = Schema(
    "PartitionProduceResponse",
    fields=(
        Field("index", INT32),
        Field("error_code", INT16),
        Field("base_offset", INT64),
        Field("log_append_time_ms", INT64, since=2, default=-1),
        Field("log_start_offset", INT64, since=5, default=-1),
        Field("record_errors", array(BATCH_INDEX_AND_ERROR_MESSAGE), since=8),
        Field("error_message", NULLABLE_STRING, since=8, default=None),
        Field("current_leader", LEADER_ID_AND_EPOCH, since=10, tag=0, tagged_since=10),
    ),
)

TOPIC_PRODUCE_RESPONSE = Schema(
    "TopicProduceResponse",
    fields=(
        Field("name", STRING, until=12),
        Field("topic_id", UUID, since=13),
        Field("partition_responses", array(PARTITION_PRODUCE_RESPONSE)),
    ),
)

NODE_ENDPOINT = Schema(
    "NodeEndpoint",
    fields=(
        Field("node_id", INT32, since=10),
        Field("host", STRING, since=10),
        Field("port", INT32, since=10),
        Field("rack", NULLABLE_STRING, since=10, default=None),
    ),
)

PRODUCE_REQUEST = Schema(
    "ProduceRequest",
    api_key=0,
    versions=range(0, 14),
    flexible_since=9,
    fields=(
        Field("transactional_id", NULLABLE_STRING, since=3, default=None),
        Field("acks", INT16),
        Field("timeout_ms", INT32),
        Field("topic_data", array(TOPIC_PRODUCE_DATA)),
    ),
)

PRODUCE_RESPONSE = Schema(
    "ProduceResponse",
    api_key=0,
    versions=range(0, 14),
    flexible_since=9,
    fields=(
        Field("responses", array(TOPIC_PRODUCE_RESPONSE)),
        Field("throttle_time_ms", INT32, since=1, default=0),
        Field("node_endpoints", array(NODE_ENDPOINT), since=10, tag=0, tagged_since=10),
    ),
)
