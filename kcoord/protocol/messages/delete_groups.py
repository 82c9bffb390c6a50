"""DeleteGroups (42), v0-2, flexible 2+.

Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, STRING

DELETABLE_GROUP_RESULT = Schema(
    "DeletableGroupResult",
    fields=(
        Field("group_id", STRING),
        Field("error_code", INT16),
    ),
)

DELETE_GROUPS_REQUEST = Schema(
    "DeleteGroupsRequest",
    api_key=42,
    versions=range(0, 3),
    flexible_since=2,
    fields=(Field("groups_names", array(STRING)),),
)

DELETE_GROUPS_RESPONSE = Schema(
    "DeleteGroupsResponse",
    api_key=42,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("results", array(DELETABLE_GROUP_RESULT)),
    ),
)
