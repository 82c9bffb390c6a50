"""ListTransactions (66), v0-2, flexible in every version (KIP-664).

Every transaction a broker coordinates, filtered by state names, producer ids, v1 a minimum running
time in ms (KIP-994, -1: any) and v2 a transactional id regular expression (KIP-1152, Kafka 4.1; null
or empty: any). unknown_state_filters echoes the state filters the coordinator does not know.
Fields from apache/kafka clients/src/main/resources/common/message/ListTransactions*.json (v0-1 in the
local mirror of Oct 2024; v2 from the 4.x file kafka-python 3.0.12 ships).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING

LISTED_TRANSACTION_STATE = Schema(
    "TransactionState",
    fields=(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("transaction_state", STRING),
    ),
)

LIST_TRANSACTIONS_REQUEST = Schema(
    "ListTransactionsRequest",
    api_key=66,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("state_filters", array(STRING)),
        Field("producer_id_filters", array(INT64)),
        Field("duration_filter", INT64, since=1, default=-1),
        Field("transactional_id_pattern", NULLABLE_STRING, since=2, default=None),
    ),
)

LIST_TRANSACTIONS_RESPONSE = Schema(
    "ListTransactionsResponse",
    api_key=66,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("unknown_state_filters", array(STRING)),
        Field("transaction_states", array(LISTED_TRANSACTION_STATE)),
    ),
)
