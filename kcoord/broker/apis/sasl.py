"""SaslHandshake (17) and SaslAuthenticate (36) once a connection is past authentication.

Before authentication the connection's SaslGate answers them (sasl_gate.py). Afterwards, or on a
listener without SASL, Kafka's KafkaApis answers both with ILLEGAL_SASL_STATE
(handleSaslHandshakeRequest, handleSaslAuthenticateRequest); re-authentication is the gate's, not
this handler's.
"""

from __future__ import annotations

from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle_authenticate", "handle_handshake"]


def handle_handshake(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    respond({"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []})


def handle_authenticate(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    respond(
        {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
        }
    )
