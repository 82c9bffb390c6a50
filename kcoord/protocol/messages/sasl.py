"""SaslHandshake (17) v0-1 and SaslAuthenticate (36) v0-2: SASL on the Kafka protocol (KIP-43, KIP-152).

SaslHandshake is never flexible (KAFKA-9577 pins it); v1 means the tokens that follow are wrapped in
SaslAuthenticate, v0 means they follow as raw length-prefixed frames. SaslAuthenticate v1 adds
session_lifetime_ms (KIP-368), v2 is flexible.
Fields from apache/kafka clients/src/main/resources/common/message/Sasl{Handshake,Authenticate}*.json.
"""

from kcoord.protocol.schema import Field, Schema, array
from kcoord.protocol.types import BYTES, INT16, INT64, NULLABLE_STRING, STRING

SASL_HANDSHAKE_REQUEST = Schema(
    "SaslHandshakeRequest",
    api_key=17,
    versions=range(0, 2),
    flexible_since=None,
    fields=(Field("mechanism", STRING),),
)

SASL_HANDSHAKE_RESPONSE = Schema(
    "SaslHandshakeResponse",
    api_key=17,
    versions=range(0, 2),
    flexible_since=None,
    fields=(
        Field("error_code", INT16, default=0),
        Field("mechanisms", array(STRING)),
    ),
)

SASL_AUTHENTICATE_REQUEST = Schema(
    "SaslAuthenticateRequest",
    api_key=36,
    versions=range(0, 3),
    flexible_since=2,
    fields=(Field("auth_bytes", BYTES),),
)

SASL_AUTHENTICATE_RESPONSE = Schema(
    "SaslAuthenticateResponse",
    api_key=36,
    versions=range(0, 3),
    flexible_since=2,
    fields=(
        Field("error_code", INT16, default=0),
        Field("error_message", NULLABLE_STRING, default=None),
        Field("auth_bytes", BYTES, default=b""),
        Field("session_lifetime_ms", INT64, since=1, default=0),
    ),
)
