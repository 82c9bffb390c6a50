"""InitProducerId (22), v0-6, flexible 2+.

v3 producer_id/epoch for KIP-360 epoch bumps; v5 may answer TRANSACTION_ABORTABLE; v6 two-phase
commit (KIP-939: enable2pc, keep_prepared_txn; the ongoing transaction's producer id and epoch), from
Kafka 4.3's InitProducerId*.json, where v6 is still `latestVersionUnstable` (not advertised).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, NULLABLE_STRING

INIT_PRODUCER_ID_REQUEST = Schema(
    "InitProducerIdRequest",
    api_key=22,
    versions=range(0, 7),
    flexible_since=2,
    fields=(
        Field("transactional_id", NULLABLE_STRING),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, since=3, default=-1),
        Field("producer_epoch", INT16, since=3, default=-1),
        Field("enable2_pc", BOOLEAN, since=6, default=False),
        Field("keep_prepared_txn", BOOLEAN, since=6, default=False),
    ),
)

INIT_PRODUCER_ID_RESPONSE = Schema(
    "InitProducerIdResponse",
    api_key=22,
    versions=range(0, 7),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
        Field("ongoing_txn_producer_id", INT64, since=6, default=-1),
        Field("ongoing_txn_producer_epoch", INT16, since=6, default=-1),
    ),
)
