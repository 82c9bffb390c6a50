"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-3 (KIP-290 pattern types from v1).

v1: the resource pattern type (LITERAL=3, PREFIXED=4; filters also ANY=1, MATCH=2), absent in v0
where it is LITERAL (the field defaults to 3 and is not ignorable, so a v0 request or response
cannot carry any other value); v2: flexible; v3: the USER resource type (no wire change).
Fields from apache/kafka clients/src/main/resources/common/message/{Describe,Create,Delete}Acls*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import INT8, INT16, INT32, NULLABLE_STRING, STRING

LITERAL_PATTERN = 3

_VERSIONS = range(0, 4)
_FLEXIBLE_SINCE = 2


def _filter_fields() -> tuple[Field, ...]:
    """An AclBindingFilter on the wire: DescribeAcls's body and each DeleteAcls filter."""
    return (
        Field("resource_type_filter", INT8),
        Field("resource_name_filter", NULLABLE_STRING),
        Field("pattern_type_filter", INT8, since=1, default=LITERAL_PATTERN),
        Field("principal_filter", NULLABLE_STRING),
        Field("host_filter", NULLABLE_STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    )


ACL_DESCRIPTION = Schema(
    "AclDescription",
    fields=(
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)

DESCRIBE_ACLS_RESOURCE = Schema(
    "DescribeAclsResource",
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8, since=1, default=LITERAL_PATTERN),
        Field("acls", array(ACL_DESCRIPTION)),
    ),
)

DESCRIBE_ACLS_REQUEST = Schema(
    "DescribeAclsRequest",
    api_key=29,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=_filter_fields(),
)

DESCRIBE_ACLS_RESPONSE = Schema(
    "DescribeAclsResponse",
    api_key=29,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("resources", array(DESCRIBE_ACLS_RESOURCE)),
    ),
)

ACL_CREATION = Schema(
    "AclCreation",
    fields=(
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("resource_pattern_type", INT8, since=1, default=LITERAL_PATTERN),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)

ACL_CREATION_RESULT = Schema(
    "AclCreationResult",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

CREATE_ACLS_REQUEST = Schema(
    "CreateAclsRequest",
    api_key=30,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=(Field("creations", array(ACL_CREATION)),),
)

CREATE_ACLS_RESPONSE = Schema(
    "CreateAclsResponse",
    api_key=30,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("results", array(ACL_CREATION_RESULT)),
    ),
)

DELETE_ACLS_FILTER = Schema("DeleteAclsFilter", fields=_filter_fields())

DELETE_ACLS_MATCHING_ACL = Schema(
    "DeleteAclsMatchingAcl",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8, since=1, default=LITERAL_PATTERN),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
)

DELETE_ACLS_FILTER_RESULT = Schema(
    "DeleteAclsFilterResult",
    fields=(
        Field("error_code", INT16),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("matching_acls", array(DELETE_ACLS_MATCHING_ACL)),
    ),
)

DELETE_ACLS_REQUEST = Schema(
    "DeleteAclsRequest",
    api_key=31,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=(Field("filters", array(DELETE_ACLS_FILTER)),),
)

DELETE_ACLS_RESPONSE = Schema(
    "DeleteAclsResponse",
    api_key=31,
    versions=_VERSIONS,
    flexible_since=_FLEXIBLE_SINCE,
    fields=(
        Field("throttle_time_ms", INT32),
        Field("filter_results", array(DELETE_ACLS_FILTER_RESULT)),
    ),
)
