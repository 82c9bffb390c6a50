"""FindCoordinator (10), v0-6. v1: key_type, throttle_time_ms, error_message; v3: flexible;
v4: batched coordinator_keys (KIP-699) with one result per key; v6: share key type. error_message as
Kafka 4.3 sends it: "NONE" for a found coordinator in v1-3, "" in every v4+ entry.

This node coordinates every group and every transactional id (a single broker leads every
`__consumer_offsets` and `__transaction_state` partition). Other key types are INVALID_REQUEST, as in
Kafka's KafkaApis.getCoordinator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC, create_internal
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["Lookup", "answer", "handle", "lookup"]

_MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}

GROUP, TRANSACTION = 0, 1


Lookup = Callable[[ServerContext, RequestMeta, str, int], dict[str, Any]]


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    answer(ctx, req, meta, respond, lookup)


def answer(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond, find: Lookup) -> None:
    """The version's answer with `find`'s entry per key (cluster mode passes its own `find`)."""
    version = meta.api_version
    key_type = int(req["key_type"])
    if key_type == GROUP:
        # KafkaApis.getCoordinator creates __consumer_offsets when a group's coordinator is first looked
        # up (AutoTopicCreationManager): from now on Metadata lists the internal topic.
        create_internal(ctx.data.offsets, OFFSETS_TOPIC)
    if version >= 4:
        keys = req["coordinator_keys"]
        # KafkaApis.handleFindCoordinatorRequestV4AndAbove never sets a Coordinator's ErrorMessage: every
        # entry, found or refused, carries the generated default, "" (not null).
        entries = [find(ctx, meta, str(key), key_type) for key in keys]
        respond({"coordinators": [{**entry, "error_message": ""} for entry in entries]})
        return
    entry = find(ctx, meta, str(req["key"]), key_type)
    del entry["key"]
    if version == 0:
        del entry["error_message"]
    elif entry["error_code"] == ErrorCode.NONE:
        # KafkaApis.handleFindCoordinatorRequestLessThanV4: Errors.NONE.message(), which is its name.
        entry["error_message"] = "NONE"
    respond(entry)


def lookup(ctx: ServerContext, meta: RequestMeta, key: str, key_type: int) -> dict[str, Any]:
    """One key's entry: this node for group and transaction keys (a single node owns them all)."""
    if ctx.authorizer is not None and (denied := _denied(ctx, meta, key, key_type)) is not None:
        # KafkaApis.getCoordinator: no node; v0-3 carry the error's default message (prepareOldResponse)
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": denied,
            "error_message": _MESSAGES[denied],
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
