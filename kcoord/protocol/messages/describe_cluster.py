"""DescribeCluster (60) v0-2, flexible in every version; v1 adds EndpointType (KIP-919); v2
include_fenced_brokers and each broker's is_fenced (KIP-1073, Kafka 4.3's DescribeCluster*.json).

Fields from apache/kafka clients/src/main/resources/common/message/DescribeCluster{Request,Response}.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING

DESCRIBE_CLUSTER_REQUEST = Schema(
    "DescribeClusterRequest",
    api_key=60,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("include_cluster_authorized_operations", BOOLEAN),
        Field("endpoint_type", INT8, since=1, default=1),
        Field("include_fenced_brokers", BOOLEAN, since=2),
    ),
)

DESCRIBE_CLUSTER_BROKER = Schema(
    "DescribeClusterBroker",
    fields=(
        Field("broker_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", NULLABLE_STRING, default=None),
        Field("is_fenced", BOOLEAN, since=2),
    ),
)

DESCRIBE_CLUSTER_RESPONSE = Schema(
    "DescribeClusterResponse",
    api_key=60,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("endpoint_type", INT8, since=1, default=1),
        Field("cluster_id", STRING),
        Field("controller_id", INT32, default=-1),
        Field("brokers", array(DESCRIBE_CLUSTER_BROKER)),
        Field("cluster_authorized_operations", INT32, default=-2147483648),
    ),
)
