"""TxnOffsetCommit (28), v0-5, flexible 3+.

v2 committed_leader_epoch; v3 the KIP-447 group metadata (generation_id, member_id,
group_instance_id); v4 may answer TRANSACTION_ABORTABLE; v5 = v4 on the wire, sent only under
transactions V2 (KIP-890 part 2), where the commit itself adds the group to the transaction.
Fields from apache/kafka clients/src/main/resources/common/message/TxnOffsetCommit*.json (v0-4 in the
local mirror of Oct 2024; Kafka 4.0's files add v5 with no field).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, INT64, NULLABLE_STRING, STRING

TXN_OFFSET_COMMIT_REQUEST_PARTITION = Schema(
    "TxnOffsetCommitRequestPartition",
    fields=(
        Field("partition_index", INT32),
        Field("committed_offset", INT64),
        Field("committed_leader_epoch", INT32, since=2, default=-1),
        Field("committed_metadata", NULLABLE_STRING),
    ),
)

TXN_OFFSET_COMMIT_REQUEST_TOPIC = Schema(
    "TxnOffsetCommitRequestTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(TXN_OFFSET_COMMIT_REQUEST_PARTITION)),
    ),
)

TXN_OFFSET_COMMIT_RESPONSE_PARTITION = Schema(
    "TxnOffsetCommitResponsePartition",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ),
)

TXN_OFFSET_COMMIT_RESPONSE_TOPIC = Schema(
    "TxnOffsetCommitResponseTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(TXN_OFFSET_COMMIT_RESPONSE_PARTITION)),
    ),
)

TXN_OFFSET_COMMIT_REQUEST = Schema(
    "TxnOffsetCommitRequest",
    api_key=28,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("transactional_id", STRING),
        Field("group_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("generation_id", INT32, since=3, default=-1),
        Field("member_id", STRING, since=3, default=""),
        Field("group_instance_id", NULLABLE_STRING, since=3, default=None),
        Field("topics", array(TXN_OFFSET_COMMIT_REQUEST_TOPIC)),
    ),
)

TXN_OFFSET_COMMIT_RESPONSE = Schema(
    "TxnOffsetCommitResponse",
    api_key=28,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("topics", array(TXN_OFFSET_COMMIT_RESPONSE_TOPIC)),
    ),
)
