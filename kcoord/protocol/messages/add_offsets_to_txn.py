"""AddOffsetsToTxn (25), v0-4, flexible 3+.

The same fields in every version: v2 may answer PRODUCER_FENCED, v4 TRANSACTION_ABORTABLE (KIP-890).
Fields from apache/kafka clients/src/main/resources/common/message/AddOffsetsToTxn*.json
(unchanged from 3.9 to 4.x).
"""

from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import INT16, INT32, INT64, STRING

ADD_OFFSETS_TO_TXN_REQUEST = Schema(
    "AddOffsetsToTxnRequest",
    api_key=25,
    versions=range(0, 5),
    flexible_since=3,
    fields=(
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("group_id", STRING),
    ),
)

ADD_OFFSETS_TO_TXN_RESPONSE = Schema(
    "AddOffsetsToTxnResponse",
    api_key=25,
    versions=range(0, 5),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ),
)
