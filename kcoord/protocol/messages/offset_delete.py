"""OffsetDelete (47), v0 only, not flexible (KIP-496).

Quirk: the response puts error_code *before* throttle_time_ms.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, STRING

OFFSET_DELETE_REQUEST_PARTITION = Schema(
    "OffsetDeleteRequestPartition",
    fields=(Field("partition_index", INT32),),
)

OFFSET_DELETE_REQUEST_TOPIC = Schema(
    "OffsetDeleteRequestTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(OFFSET_DELETE_REQUEST_PARTITION)),
    ),
)

OFFSET_DELETE_RESPONSE_PARTITION = Schema(
    "OffsetDeleteResponsePartition",
    fields=(
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ),
)

OFFSET_DELETE_RESPONSE_TOPIC = Schema(
    "OffsetDeleteResponseTopic",
    fields=(
        Field("name", STRING),
        Field("partitions", array(OFFSET_DELETE_RESPONSE_PARTITION)),
    ),
)

OFFSET_DELETE_REQUEST = Schema(
    "OffsetDeleteRequest",
    api_key=47,
    versions=range(0, 1),
    fields=(
        Field("group_id", STRING),
        Field("topics", array(OFFSET_DELETE_REQUEST_TOPIC)),
    ),
)

OFFSET_DELETE_RESPONSE = Schema(
    "OffsetDeleteResponse",
    api_key=47,
    versions=range(0, 1),
    fields=(
        Field("error_code", INT16),
        Field("throttle_time_ms", INT32),
        Field("topics", array(OFFSET_DELETE_RESPONSE_TOPIC)),
    ),
)
