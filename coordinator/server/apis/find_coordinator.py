"""FindCoordinator (10), v0-6. v1: key_type, throttle_time_ms, error_message; v3: flexible;
v4: batched coordinator_keys (KIP-699) with one result per key; v6: share key type.

This node coordinates every group and every transactional id (a single broker leads every
`__consumer_offsets` and `__transaction_state` partition). Other key types are INVALID_REQUEST, as in
Kafka's KafkaApis.getCoordinator.
"""

from __future__ import annotations

from typing import Any

from kcoord.coordinator.security.acls import AclOperation, ResourceType
from kcoord.coordinator.server import authz
from kcoord.coordinator.server.context import Request, RequestMeta, Respond, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

_MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}

GROUP, TRANSACTION = 0, 1


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    key_type = int(req["key_type"])
    if version >= 4:
        keys = req["coordinator_keys"]
        respond({"coordinators": [_lookup(ctx, meta, str(key), key_type) for key in keys]})
        return
    entry = _lookup(ctx, meta, str(req["key"]), key_type)
    del entry["key"]
    if version == 0:
        del entry["error_message"]
    respond(entry)


def _lookup(ctx: ServerContext, meta: RequestMeta, key: str, key_type: int) -> dict[str, Any]:
    if ctx.authorizer is not None and (denied := _denied(ctx, meta, key, key_type)) is not None:
        # KafkaApis.getCoordinator: no node; v0-3 carry the error's default message (prepareOldResponse)
        message = None if meta.api_version >= 4 else _MESSAGES[denied]
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": denied,
            "error_message": message,
        }
    if key_type in (GROUP, TRANSACTION):
        node = ctx.endpoint(meta)  # the listener the request arrived on (issue 25)
        return {
            "key": key,
            "node_id": ctx.node_id,
            "host": node.host,
            "port": node.port,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
    error, message = ErrorCode.INVALID_REQUEST, f"unsupported coordinator key type {key_type}"
    # On error Kafka answers NodeId -1, Host "", Port -1.
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": error, "error_message": message}


def _denied(ctx: ServerContext, meta: RequestMeta, key: str, key_type: int) -> ErrorCode | None:
    """KafkaApis.getCoordinator: DESCRIBE on the group or the transactional id, checked first."""
    if key_type == GROUP and not authz.allowed(ctx, meta, 10, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION and not authz.allowed(
        ctx, meta, 10, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None
