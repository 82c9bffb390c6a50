"""ShareAcknowledge (79), v1-2, flexible in every version (KIP-932 share groups).

v0 was Kafka 4.0's early access and is gone since 4.1; v2 adds IsRenewAck to the request and
AcquisitionLockTimeoutMs to the response (KIP-1222). Fields as Kafka 4.3.1's ShareAcknowledgeRequestData /
ShareAcknowledgeResponseData SCHEMAS (checked against the jar; ShareAcknowledge{Request,Response}.json).
"""

from kcoord.protocol.messages.share_fetch import ACKNOWLEDGEMENT_BATCH, LEADER_ID_AND_EPOCH, NODE_ENDPOINT
from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, NULLABLE_STRING, UUID

_ACKNOWLEDGE_PARTITION = Schema(
    "AcknowledgePartition",
    fields=(
        Field("partition_index", INT32),
        Field("acknowledgement_batches", array(ACKNOWLEDGEMENT_BATCH)),
    ),
)

_ACKNOWLEDGE_TOPIC = Schema(
    "AcknowledgeTopic",
    fields=(Field("topic_id", UUID), Field("partitions", array(_ACKNOWLEDGE_PARTITION))),
)

SHARE_ACKNOWLEDGE_REQUEST = Schema(
    "ShareAcknowledgeRequest",
    api_key=79,
    versions=range(1, 3),
    flexible_since=0,
    fields=(
        Field("group_id", NULLABLE_STRING, default=None),
        Field("member_id", NULLABLE_STRING),
        Field("share_session_epoch", INT32),
        Field("is_renew_ack", BOOLEAN, since=2, default=False),
        Field("topics", array(_ACKNOWLEDGE_TOPIC)),
    ),
)

_PARTITION_DATA = Schema(
    "PartitionData",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("current_leader", LEADER_ID_AND_EPOCH),
    ),
)

_TOPIC_RESPONSE = Schema(
    "ShareAcknowledgeTopicResponse",
    fields=(Field("topic_id", UUID), Field("partitions", array(_PARTITION_DATA))),
)

SHARE_ACKNOWLEDGE_RESPONSE = Schema(
    "ShareAcknowledgeResponse",
    api_key=79,
    versions=range(1, 3),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("acquisition_lock_timeout_ms", INT32, since=2, default=0),
        Field("responses", array(_TOPIC_RESPONSE)),
        Field("node_endpoints", array(NODE_ENDPOINT)),
    ),
)
