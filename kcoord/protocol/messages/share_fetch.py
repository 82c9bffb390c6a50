"""ShareFetch (78), v1-2, flexible in every version (KIP-932 share groups).

v0 was Kafka 4.0's early access and is gone since 4.1; v1 is the first stable version; v2 adds
ShareAcquireMode (KIP-1206: 0 batch-optimized, 1 record-limit) and IsRenewAck (KIP-1222: the request only
renews acquisition locks and fetches nothing). Fields as Kafka 4.3.1's ShareFetchRequestData /
ShareFetchResponseData SCHEMAS (checked against the jar; ShareFetch{Request,Response}.json in
apache/kafka clients/src/main/resources/common/message/).
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING, UUID

# Shared with ShareAcknowledge (79): acknowledge types 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2).
ACKNOWLEDGEMENT_BATCH = Schema(
    "AcknowledgementBatch",
    fields=(
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("acknowledge_types", array(INT8)),
    ),
)

LEADER_ID_AND_EPOCH = Schema(
    "LeaderIdAndEpoch",
    fields=(Field("leader_id", INT32), Field("leader_epoch", INT32)),
)

NODE_ENDPOINT = Schema(
    "NodeEndpoint",
    fields=(
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", NULLABLE_STRING, default=None),
    ),
)

_FETCH_PARTITION = Schema(
    "FetchPartition",
    fields=(
        Field("partition_index", INT32),
        Field("acknowledgement_batches", array(ACKNOWLEDGEMENT_BATCH)),
    ),
)

_FETCH_TOPIC = Schema(
    "FetchTopic",
    fields=(Field("topic_id", UUID), Field("partitions", array(_FETCH_PARTITION))),
)

_FORGOTTEN_TOPIC = Schema(
    "ForgottenTopic",
    fields=(Field("topic_id", UUID), Field("partitions", array(INT32))),
)

SHARE_FETCH_REQUEST = Schema(
    "ShareFetchRequest",
    api_key=78,
    versions=range(1, 3),
    flexible_since=0,
    fields=(
        Field("group_id", NULLABLE_STRING, default=None),
        Field("member_id", NULLABLE_STRING),
        Field("share_session_epoch", INT32),  # 0 opens a session, -1 closes it, else the previous + 1
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, default=0x7FFFFFFF),
        Field("max_records", INT32),
        Field("batch_size", INT32),
        Field("share_acquire_mode", INT8, since=2, default=0),
        Field("is_renew_ack", BOOLEAN, since=2, default=False),
        Field("topics", array(_FETCH_TOPIC)),
        Field("forgotten_topics_data", array(_FORGOTTEN_TOPIC)),
    ),
)

ACQUIRED_RECORDS = Schema(
    "AcquiredRecords",
    fields=(
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("delivery_count", INT16),
    ),
)

_PARTITION_DATA = Schema(
    "PartitionData",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("acknowledge_error_code", INT16, default=0),
        Field("acknowledge_error_message", NULLABLE_STRING, default=None),
        Field("current_leader", LEADER_ID_AND_EPOCH),
        Field("records", RECORDS, default=None),
        Field("acquired_records", array(ACQUIRED_RECORDS)),
    ),
)

_TOPIC_RESPONSE = Schema(
    "ShareFetchableTopicResponse",
    fields=(Field("topic_id", UUID), Field("partitions", array(_PARTITION_DATA))),
)

SHARE_FETCH_RESPONSE = Schema(
    "ShareFetchResponse",
    api_key=78,
    versions=range(1, 3),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("acquisition_lock_timeout_ms", INT32, default=0),
        Field("responses", array(_TOPIC_RESPONSE)),
        Field("node_endpoints", array(NODE_ENDPOINT)),
    ),
)
