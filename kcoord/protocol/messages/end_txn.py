"""EndTxn (26), v0-5, flexible 3+.

v2 may answer PRODUCER_FENCED, v4 TRANSACTION_ABORTABLE; v5 is transactions V2 (KIP-890 part 2): the
coordinator bumps the epoch at every transaction's end and answers the producer id and epoch to use
next. Kafka 4.0 declares v5 stable (3.9's file still marks it latestVersionUnstable).
Fields from apache/kafka clients/src/main/resources/common/message/EndTxn*.json.
"""

from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, STRING

END_TXN_REQUEST = Schema(
    "EndTxnRequest",
    api_key=26,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("committed", BOOLEAN),  # true: commit, false: abort
    ),
)

END_TXN_RESPONSE = Schema(
    "EndTxnResponse",
    api_key=26,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, since=5, default=-1),
        Field("producer_epoch", INT16, since=5, default=-1),
    ),
)
