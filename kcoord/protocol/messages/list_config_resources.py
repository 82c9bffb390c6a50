"""ListConfigResources (74) v0-1, flexible in every version. v0 was ListClientMetricsResources (it lists
client metrics subscriptions only); v1 adds the requested resource types and each resource's type
(KIP-1142, Kafka 4.1).

Fields from apache/kafka clients/src/main/resources/common/message/ListConfigResources{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, STRING

LIST_CONFIG_RESOURCES_REQUEST = Schema(
    "ListConfigResourcesRequest",
    api_key=74,
    versions=range(0, 2),
    flexible_since=0,
    fields=(Field("resource_types", array(INT8), since=1),),
)

LIST_CONFIG_RESOURCES_RESOURCE = Schema(
    "ListConfigResourcesResource",
    fields=(
        Field("resource_name", STRING),
        Field("resource_type", INT8, since=1, default=16),  # CLIENT_METRICS, the only type of v0
    ),
)

LIST_CONFIG_RESOURCES_RESPONSE = Schema(
    "ListConfigResourcesResponse",
    api_key=74,
    versions=range(0, 2),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16),
        Field("config_resources", array(LIST_CONFIG_RESOURCES_RESOURCE)),
    ),
)
