"""FindCoordinator (10), v0-6, flexible 3+.

v1 key_type; v4 batches keys (KIP-699): the single key/node fields are replaced by coordinator_keys
and coordinators; v6 allows key type 2 (share groups, KIP-932).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, NULLABLE_STRING, STRING

COORDINATOR = Schema(
    "Coordinator",
    fields=(
        Field("key", STRING, since=4),
        Field("node_id", INT32, since=4),
        Field("host", STRING, since=4),
        Field("port", INT32, since=4),
        Field("error_code", INT16, since=4),
        Field("error_message", NULLABLE_STRING, since=4),
    ),
)

FIND_COORDINATOR_REQUEST = Schema(
    "FindCoordinatorRequest",
    api_key=10,
    versions=range(0, 7),
    flexible_since=3,
    fields=(
        Field("key", STRING, until=3),
        Field("key_type", INT8, since=1, default=0),
        Field("coordinator_keys", array(STRING), since=4),
    ),
)

FIND_COORDINATOR_RESPONSE = Schema(
    "FindCoordinatorResponse",
    api_key=10,
    versions=range(0, 7),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16, until=3),
        Field("error_message", NULLABLE_STRING, since=1, until=3),
        Field("node_id", INT32, until=3),
        Field("host", STRING, until=3),
        Field("port", INT32, until=3),
        Field("coordinators", array(COORDINATOR), since=4),
    ),
)
