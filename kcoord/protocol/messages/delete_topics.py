"""DeleteTopics (20), v0-6, flexible 4+.

v5 error_message; v6 deletes by name or id: topic_names (v0-5) becomes topics (KIP-516).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, NULLABLE_STRING, STRING, UUID

DELETE_TOPIC_STATE = Schema(
    "DeleteTopicState",
    fields=(
        Field("name", NULLABLE_STRING, since=6, default=None),
        Field("topic_id", UUID, since=6),
    ),
)

DELETABLE_TOPIC_RESULT = Schema(
    "DeletableTopicResult",
    fields=(
        Field("name", STRING, nullable_since=6),
        Field("topic_id", UUID, since=6),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, since=5, default=None),
    ),
)

DELETE_TOPICS_REQUEST = Schema(
    "DeleteTopicsRequest",
    api_key=20,
    versions=range(0, 7),
    flexible_since=4,
    fields=(
        Field("topics", array(DELETE_TOPIC_STATE), since=6),
        Field("topic_names", array(STRING), until=5),
        Field("timeout_ms", INT32),
    ),
)

DELETE_TOPICS_RESPONSE = Schema(
    "DeleteTopicsResponse",
    api_key=20,
    versions=range(0, 7),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("responses", array(DELETABLE_TOPIC_RESULT)),
    ),
)
