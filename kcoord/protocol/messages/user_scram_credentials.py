"""DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0 (KIP-554), flexible.

mechanism is Kafka's ScramMechanism type byte: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512 (0 = UNKNOWN).
The client sends the salted password, never the password itself.
Fields from apache/kafka clients/src/main/resources/common/message/{Describe,Alter}UserScramCredentials*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BYTES, INT8, INT16, INT32, NULLABLE_STRING, STRING

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Schema(
    "DescribeUserScramCredentialsRequest",
    api_key=50,
    versions=range(0, 1),
    flexible_since=0,
    fields=(Field("users", array(Schema("UserName", fields=(Field("name", STRING),))), nullable_since=0),),
)

CREDENTIAL_INFO = Schema(
    "CredentialInfo",
    fields=(
        Field("mechanism", INT8),
        Field("iterations", INT32),
    ),
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT = Schema(
    "DescribeUserScramCredentialsResult",
    fields=(
        Field("user", STRING),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("credential_infos", array(CREDENTIAL_INFO)),
    ),
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Schema(
    "DescribeUserScramCredentialsResponse",
    api_key=50,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("results", array(DESCRIBE_USER_SCRAM_CREDENTIALS_RESULT)),
    ),
)

SCRAM_CREDENTIAL_DELETION = Schema(
    "ScramCredentialDeletion",
    fields=(
        Field("name", STRING),
        Field("mechanism", INT8),
    ),
)

SCRAM_CREDENTIAL_UPSERTION = Schema(
    "ScramCredentialUpsertion",
    fields=(
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("iterations", INT32),
        Field("salt", BYTES),
        Field("salted_password", BYTES),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Schema(
    "AlterUserScramCredentialsRequest",
    api_key=51,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("deletions", array(SCRAM_CREDENTIAL_DELETION)),
        Field("upsertions", array(SCRAM_CREDENTIAL_UPSERTION)),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS_RESULT = Schema(
    "AlterUserScramCredentialsResult",
    fields=(
        Field("user", STRING),
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
    ),
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Schema(
    "AlterUserScramCredentialsResponse",
    api_key=51,
    versions=range(0, 1),
    flexible_since=0,
    fields=(
        Field("throttle_time_ms", INT32, default=0),
        Field("results", array(ALTER_USER_SCRAM_CREDENTIALS_RESULT)),
    ),
)
