"""DescribeConfigs (32) v0-4, AlterConfigs (33) v0-2, IncrementalAlterConfigs (44) v0-1.

Fields from apache/kafka clients/src/main/resources/common/message/{DescribeConfigs,AlterConfigs,
IncrementalAlterConfigs}{Request,Response}.json. Flexible from DescribeConfigs v4, AlterConfigs v2 and
IncrementalAlterConfigs v1.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BOOLEAN, INT8, INT16, INT32, NULLABLE_STRING, STRING

# -- DescribeConfigs ------------------------------------------------------------------------------
DESCRIBE_CONFIGS_RESOURCE = Schema(
    "DescribeConfigsResource",
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configuration_keys", array(STRING), nullable_since=0),
    ),
)

DESCRIBE_CONFIGS_REQUEST = Schema(
    "DescribeConfigsRequest",
    api_key=32,
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("resources", array(DESCRIBE_CONFIGS_RESOURCE)),
        Field("include_synonyms", BOOLEAN, since=1, default=False),
        Field("include_documentation", BOOLEAN, since=3, default=False),
    ),
)

DESCRIBE_CONFIGS_SYNONYM = Schema(
    "DescribeConfigsSynonym",
    fields=(
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
        Field("source", INT8),
    ),
)

DESCRIBE_CONFIGS_RESOURCE_RESULT = Schema(
    "DescribeConfigsResourceResult",
    fields=(
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
        Field("read_only", BOOLEAN),
        Field("is_default", BOOLEAN, until=0, default=False),
        Field("config_source", INT8, since=1, default=-1),
        Field("is_sensitive", BOOLEAN),
        Field("synonyms", array(DESCRIBE_CONFIGS_SYNONYM), since=1, default=()),
        Field("config_type", INT8, since=3, default=0),
        Field("documentation", NULLABLE_STRING, since=3, default=None),
    ),
)

DESCRIBE_CONFIGS_RESULT = Schema(
    "DescribeConfigsResult",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", array(DESCRIBE_CONFIGS_RESOURCE_RESULT)),
    ),
)

DESCRIBE_CONFIGS_RESPONSE = Schema(
    "DescribeConfigsResponse",
    api_key=32,
    versions=range(0, 5),
    flexible_since=4,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("results", array(DESCRIBE_CONFIGS_RESULT)),
    ),
)

# -- AlterConfigs and IncrementalAlterConfigs -----------------------------------------------------
ALTERABLE_CONFIG = Schema(
    "AlterableConfig",
    fields=(
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
    ),
)

ALTER_CONFIGS_RESOURCE = Schema(
    "AlterConfigsResource",
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", array(ALTERABLE_CONFIG)),
    ),
)

ALTER_CONFIGS_REQUEST = Schema(
    "AlterConfigsRequest",
    api_key=33,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("resources", array(ALTER_CONFIGS_RESOURCE)),
        Field("validate_only", BOOLEAN),
    ),
)

INCREMENTAL_ALTERABLE_CONFIG = Schema(
    "IncrementalAlterableConfig",
    fields=(
        Field("name", STRING),
        Field("config_operation", INT8),  # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
        Field("value", NULLABLE_STRING),
    ),
)

INCREMENTAL_ALTER_CONFIGS_RESOURCE = Schema(
    "IncrementalAlterConfigsResource",
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", array(INCREMENTAL_ALTERABLE_CONFIG)),
    ),
)

INCREMENTAL_ALTER_CONFIGS_REQUEST = Schema(
    "IncrementalAlterConfigsRequest",
    api_key=44,
    versions=range(0, 2),
    flexible_since=1,
    fields=(
        Field("resources", array(INCREMENTAL_ALTER_CONFIGS_RESOURCE)),
        Field("validate_only", BOOLEAN),
    ),
)

ALTER_CONFIGS_RESOURCE_RESPONSE = Schema(
    "AlterConfigsResourceResponse",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
    ),
)

ALTER_CONFIGS_RESPONSE = Schema(
    "AlterConfigsResponse",
    api_key=33,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("responses", array(ALTER_CONFIGS_RESOURCE_RESPONSE)),
    ),
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Schema(
    "IncrementalAlterConfigsResponse",
    api_key=44,
    versions=range(0, 2),
    flexible_since=1,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("responses", array(ALTER_CONFIGS_RESOURCE_RESPONSE)),
    ),
)
