"""AddPartitionsToTxn (24), v0-5, flexible 3+.

v0-3 are the client's form: one transaction (the `v3_and_below_*` fields) and its topics, answered
per topic. v4+ is the broker's batched form (KIP-890 part 1): several transactions, each with
verify_only (only check that the partitions are already in the transaction, add nothing), answered
by transaction with a top-level error_code. v2 may answer PRODUCER_FENCED, v5 TRANSACTION_ABORTABLE.
Fields from apache/kafka clients/src/main/resources/common/message/AddPartitionsToTxn*.json
(unchanged from 3.9 to 4.x).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, STRING

ADD_PARTITIONS_TO_TXN_TOPIC = Schema(
    "AddPartitionsToTxnTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(INT32)),
    ),
)

ADD_PARTITIONS_TO_TXN_TRANSACTION = Schema(
    "AddPartitionsToTxnTransaction",
    fields=(
        Field("transactional_id", STRING, since=4),
        Field("producer_id", INT64, since=4),
        Field("producer_epoch", INT16, since=4),
        Field("verify_only", BOOLEAN, since=4, default=False),
        Field("topics", array(ADD_PARTITIONS_TO_TXN_TOPIC), since=4),
    ),
)

ADD_PARTITIONS_TO_TXN_PARTITION_RESULT = Schema(
    "AddPartitionsToTxnPartitionResult",
    fields=(
        Field("partition_index", INT32),
        Field("partition_error_code", INT16),
    ),
)

ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = Schema(
    "AddPartitionsToTxnTopicResult",
    fields=(
        Field("name", STRING),
        Field("results_by_partition", array(ADD_PARTITIONS_TO_TXN_PARTITION_RESULT)),
    ),
)

ADD_PARTITIONS_TO_TXN_RESULT = Schema(
    "AddPartitionsToTxnResult",
    fields=(
        Field("transactional_id", STRING, since=4),
        Field("topic_results", array(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), since=4),
    ),
)

ADD_PARTITIONS_TO_TXN_REQUEST = Schema(
    "AddPartitionsToTxnRequest",
    api_key=24,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("transactions", array(ADD_PARTITIONS_TO_TXN_TRANSACTION), since=4),
        Field("v3_and_below_transactional_id", STRING, until=3),
        Field("v3_and_below_producer_id", INT64, until=3),
        Field("v3_and_below_producer_epoch", INT16, until=3),
        Field("v3_and_below_topics", array(ADD_PARTITIONS_TO_TXN_TOPIC), until=3),
    ),
)

ADD_PARTITIONS_TO_TXN_RESPONSE = Schema(
    "AddPartitionsToTxnResponse",
    api_key=24,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, since=4),
        Field("results_by_transaction", array(ADD_PARTITIONS_TO_TXN_RESULT), since=4),
        Field("results_by_topic_v3_and_below", array(ADD_PARTITIONS_TO_TXN_TOPIC_RESULT), until=3),
    ),
)
