"""WriteTxnMarkers (27), v0-2, flexible 1+.

What a transaction coordinator sends a partition leader: write a COMMIT (transaction_result true) or
ABORT control batch for each producer on each partition; `kafka-transactions.sh --abort` sends it too
(Admin.abortTransaction). Kafka 4.0 removed v0 (v1 is its baseline); v2 (KIP-1228, after 4.0) adds the
marker's transaction_version (0/1 = transactions V1, 2 = V2), ignorable.
Fields from apache/kafka clients/src/main/resources/common/message/WriteTxnMarkers*.json (v0-1 in the
local mirror of Oct 2024; v2 from the 4.x file kafka-python 3.0.12 ships).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, INT64, STRING

WRITABLE_TXN_MARKER_TOPIC = Schema(
    "WritableTxnMarkerTopic",
    fields=(
        Field("name", STRING),
        Field("partition_indexes", array(INT32)),
    ),
)

WRITABLE_TXN_MARKER = Schema(
    "WritableTxnMarker",
    fields=(
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("transaction_result", BOOLEAN),  # true: COMMIT, false: ABORT
        Field("topics", array(WRITABLE_TXN_MARKER_TOPIC)),
        Field("coordinator_epoch", INT32),
        Field("transaction_version", INT8, since=2, default=0),
    ),
)

WRITABLE_TXN_MARKER_PARTITION_RESULT = Schema(
    "WritableTxnMarkerPartitionResult",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ),
)

WRITABLE_TXN_MARKER_TOPIC_RESULT = Schema(
    "WritableTxnMarkerTopicResult",
    fields=(
        Field("name", STRING),
        Field("partitions", array(WRITABLE_TXN_MARKER_PARTITION_RESULT)),
    ),
)

WRITABLE_TXN_MARKER_RESULT = Schema(
    "WritableTxnMarkerResult",
    fields=(
        Field("producer_id", INT64),
        Field("topics", array(WRITABLE_TXN_MARKER_TOPIC_RESULT)),
    ),
)

WRITE_TXN_MARKERS_REQUEST = Schema(
    "WriteTxnMarkersRequest",
    api_key=27,
    versions=range(0, 3),
    flexible_since=1,
    fields=(Field("markers", array(WRITABLE_TXN_MARKER)),),
)

WRITE_TXN_MARKERS_RESPONSE = Schema(
    "WriteTxnMarkersResponse",
    api_key=27,
    versions=range(0, 3),
    flexible_since=1,
    fields=(Field("markers", array(WRITABLE_TXN_MARKER_RESULT)),),
)
