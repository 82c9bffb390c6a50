"""InitProducerId (22), v0-5, flexible 2+.

v3 producer_id/epoch for KIP-360 epoch bumps.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING

INIT_PRODUCER_ID_REQUEST = Schema(
    "InitProducerIdRequest",
    api_key=22,
    versions=range(0, 6),
    flexible_since=2,
    fields=(
        Field("transactional_id", NULLABLE_STRING),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, since=3, default=-1),
        Field("producer_epoch", INT16, since=3, default=-1),
    ),
)

INIT_PRODUCER_ID_RESPONSE = Schema(
    "InitProducerIdResponse",
    api_key=22,
    versions=range(0, 6),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
    ),
)
