"""ListGroups (16), v0-5, flexible 3+.

v4 states_filter / group_state (KIP-518); v5 types_filter / group_type (KIP-848).
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT16, INT32, STRING

LISTED_GROUP = Schema(
    "ListedGroup",
    fields=(
        Field("group_id", STRING),
        Field("protocol_type", STRING),
        Field("group_state", STRING, since=4),
        Field("group_type", STRING, since=5),
    ),
)

LIST_GROUPS_REQUEST = Schema(
    "ListGroupsRequest",
    api_key=16,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("states_filter", array(STRING), since=4),
        Field("types_filter", array(STRING), since=5),
    ),
)

LIST_GROUPS_RESPONSE = Schema(
    "ListGroupsResponse",
    api_key=16,
    versions=range(0, 6),
    flexible_since=3,
    fields=(
        Field("throttle_time_ms", INT32, since=1),
        Field("error_code", INT16),
        Field("groups", array(LISTED_GROUP)),
    ),
)
