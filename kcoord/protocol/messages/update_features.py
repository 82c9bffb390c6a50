"""UpdateFeatures (57), v0-2, flexible in every version (KIP-584): change finalized feature levels.
v0 allow_downgrade; v1 upgrade_type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and
validate_only; v2 answers only the top-level error (no per-feature results).
Fields from Kafka 4.3's clients/src/main/resources/common/message/UpdateFeatures*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING

FEATURE_UPDATE_KEY = Schema(
    "FeatureUpdateKey",
    fields=(
        Field("feature", STRING),
        Field("max_version_level", INT16),
        Field("allow_downgrade", BOOLEAN, until=0),
        Field("upgrade_type", INT8, since=1, default=1),
    ),
)

UPDATABLE_FEATURE_RESULT = Schema(
    "UpdatableFeatureResult",
    fields=(
        Field("feature", STRING),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING),
    ),
)

UPDATE_FEATURES_REQUEST = Schema(
    "UpdateFeaturesRequest",
    api_key=57,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("timeout_ms", INT32, default=60000),
        Field("feature_updates", array(FEATURE_UPDATE_KEY)),
        Field("validate_only", BOOLEAN, since=1, default=False),
    ),
)

UPDATE_FEATURES_RESPONSE = Schema(
    "UpdateFeaturesResponse",
    api_key=57,
    versions=range(0, 3),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING),
        Field("results", array(UPDATABLE_FEATURE_RESULT), until=1),
    ),
)
