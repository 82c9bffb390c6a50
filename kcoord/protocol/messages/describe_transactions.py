"""DescribeTransactions (65), v0, flexible in every version (KIP-664).

Sent to each transactional id's coordinator: its state (Kafka's TransactionState names, e.g.
"Ongoing", "PrepareCommit"), timeout, start time (-1 when no transaction is open), producer id and
epoch and the partitions in the transaction.
Fields from apache/kafka clients/src/main/resources/common/message/DescribeTransactions*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, STRING

TOPIC_DATA = Schema(
    "TopicData",
    fields=(
        Field("topic", STRING),
        Field("partitions", array(INT32)),
    ),
)

TRANSACTION_STATE = Schema(
    "TransactionState",
    fields=(
        Field("error_code", INT16),
        Field("transactional_id", STRING),
        Field("transaction_state", STRING),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_start_time_ms", INT64),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("topics", array(TOPIC_DATA)),
    ),
)

DESCRIBE_TRANSACTIONS_REQUEST = Schema(
    "DescribeTransactionsRequest",
    api_key=65,
    versions=range(0, 1),
    flexible_since=0,
    fields=(Field("transactional_ids", array(STRING)),),
)

DESCRIBE_TRANSACTIONS_RESPONSE = Schema(
    "DescribeTransactionsResponse",
    api_key=65,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("transaction_states", array(TRANSACTION_STATE)),
    ),
)
