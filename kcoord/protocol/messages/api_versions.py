"""ApiVersions (18), v0-4, flexible 3+.

v1 adds throttle_time_ms; v3 adds the client software name/version and the tagged feature fields
(KIP-511, KIP-584); v4 only changes semantics (features with min 0 are listed, KAFKA-17011).
Quirk: the response header is always v0 (frames.py), and an unsupported request version is answered
with a v0-layout body (error 35) -- apache/kafka ApiVersionsRequest.getErrorResponse.
Fields from apache/kafka 3.9 clients/src/main/resources/common/message/*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT16, INT32, INT64, STRING

API_VERSION = Schema(
    "ApiVersion",
    fields=(
        Field("api_key", INT16),
        Field("min_version", INT16),
        Field("max_version", INT16),
    ),
)

SUPPORTED_FEATURE_KEY = Schema(
    "SupportedFeatureKey",
    fields=(
        Field("name", STRING, since=3),
        Field("min_version", INT16, since=3),
        Field("max_version", INT16, since=3),
    ),
)

FINALIZED_FEATURE_KEY = Schema(
    "FinalizedFeatureKey",
    fields=(
        Field("name", STRING, since=3),
        Field("max_version_level", INT16, since=3),
        Field("min_version_level", INT16, since=3),
    ),
)

API_VERSIONS_REQUEST = Schema(
    "ApiVersionsRequest",
    api_key=18,
    versions=range(0, 5),
    flexible_since=3,
    fields=(
        Field("client_software_name", STRING, since=3),
        Field("client_software_version", STRING, since=3),
    ),
)

API_VERSIONS_RESPONSE = Schema(
    "ApiVersionsResponse",
    api_key=18,
    versions=range(0, 5),
    flexible_since=3,
    fields=(
        Field("error_code", INT16),
        Field("api_keys", array(API_VERSION)),
        Field("throttle_time_ms", INT32, since=1),
        Field("supported_features", array(SUPPORTED_FEATURE_KEY), since=3, tag=0, tagged_since=3),
        Field("finalized_features_epoch", INT64, since=3, default=-1, tag=1, tagged_since=3),
        Field("finalized_features", array(FINALIZED_FEATURE_KEY), since=3, tag=2, tagged_since=3),
        Field("zk_migration_ready", BOOLEAN, since=3, default=False, tag=3, tagged_since=3),
    ),
)
