"""The authorization calls API handlers make (Kafka's AuthHelper), over `ctx.authorizer`.

Every handler tests `ctx.authorizer is None` before calling in here, so with no authorizer (the
default) a request pays one attribute test per check and nothing else. A denied explicit check is
counted per API for /metrics (`kcoord_authorization_denials`); filtering (all-topics Metadata,
ListGroups) and authorized-operations bit fields are not denials, as Kafka logs those only at trace
(logIfDenied=false).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kcoord.broker.context import RequestMeta, ServerContext
from kcoord.broker.security.authorizer import SUPPORTED_OPERATIONS, StandardAuthorizer
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType

__all__ = [
    "allowed",
    "allowed_by_resource_type",
    "authorized_operations",
    "cluster_allowed",
    "filter_allowed",
    "topic_describable",
]

Op, Res = AclOperation, ResourceType


def _authorizer(ctx: ServerContext) -> StandardAuthorizer:
    authorizer = ctx.authorizer
    assert authorizer is not None, "callers test ctx.authorizer first"
    return authorizer


def _denied(ctx: ServerContext, api_key: int) -> None:
    if (stats := ctx.stats) is not None:
        stats.denials[api_key] = stats.denials.get(api_key, 0) + 1


def allowed(
    ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation, resource_type: ResourceType,
    name: str,
) -> bool:  # fmt: skip
    """AuthHelper.authorize for one resource the request names."""
    if _authorizer(ctx).authorize(meta.principal, meta.client_host, operation, resource_type, name):
        return True
    _denied(ctx, api_key)
    return False


def cluster_allowed(ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation) -> bool:
    """AuthHelper.authorizeClusterOperation's test: `operation` on CLUSTER kafka-cluster."""
    return allowed(ctx, meta, api_key, operation, Res.CLUSTER, CLUSTER_NAME)


def allowed_by_resource_type(
    ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation, resource_type: ResourceType
) -> bool:
    if _authorizer(ctx).authorize_by_resource_type(
        meta.principal, meta.client_host, operation, resource_type
    ):
        return True
    _denied(ctx, api_key)
    return False


def filter_allowed(
    ctx: ServerContext, meta: RequestMeta, api_key: int, operation: AclOperation, resource_type: ResourceType,
    names: Iterable[str], count_denials: bool = True,
) -> set[str]:  # fmt: skip
    """AuthHelper.filterByAuthorized: the distinct names the caller may `operation`."""
    authorizer = _authorizer(ctx)
    principal, host = meta.principal, meta.client_host
    out: set[str] = set()
    for name in set(names):
        if authorizer.authorize(principal, host, operation, resource_type, name):
            out.add(name)
        elif count_denials:
            _denied(ctx, api_key)
    return out


def topic_describable(ctx: ServerContext, meta: RequestMeta) -> Callable[[str], bool]:
    """DESCRIBE TOPIC for this request's principal and host, asked once per topic per request: the
    group logic filters what its subscription regexes match with it (Kafka's
    refreshRegularExpressions authorizes with the context of the heartbeat that triggered the
    refresh). A filtered topic is not a denial: Kafka's Action there has logIfDenied=false."""
    authorizer, principal, host = _authorizer(ctx), meta.principal, meta.client_host
    decided: dict[str, bool] = {}

    def describable(topic: str) -> bool:
        if (allowed := decided.get(topic)) is None:
            allowed = decided[topic] = authorizer.authorize(principal, host, Op.DESCRIBE, Res.TOPIC, topic)
        return allowed

    return describable


def authorized_operations(
    ctx: ServerContext, meta: RequestMeta, resource_type: ResourceType, name: str
) -> int:
    """AuthHelper.authorizedOperations: every supported operation without an authorizer."""
    authorizer = ctx.authorizer
    if authorizer is None:
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            bits |= 1 << operation
        return bits
    return authorizer.authorized_operations(meta.principal, meta.client_host, resource_type, name)
