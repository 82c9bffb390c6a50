"""ListConfigResources (74), v0-1 (Kafka 4.1+, KIP-1142; v0 was ListClientMetricsResources).

As Kafka's KafkaApis.handleListConfigResources: DESCRIBE_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED with nothing listed; the types a version knows
(ListConfigResourcesRequest.supportedResourceTypes: v0 CLIENT_METRICS, v1 also TOPIC, BROKER,
BROKER_LOGGER and GROUP), every one of them when none is named, UNSUPPORTED_VERSION for any other.
Listed: every topic, every broker (this node, or every live node in cluster mode), the groups that have
configs of their own. kcoord has no client metrics subscriptions (KIP-714) and no broker loggers to
describe, so those types list nothing (docs/compat.md); in cluster mode a node lists the configured
groups of the shards it coordinates.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.group_config_resources import cluster_wide
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_SUPPORTED = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    body: dict[str, Any] = {"error_code": ErrorCode.NONE, "config_resources": []}
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, 74, AclOperation.DESCRIBE_CONFIGS):
        respond({**body, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED})
        return
    supported = _SUPPORTED[meta.api_version]
    wanted = [int(t) for t in req.get("resource_types") or ()] or list(supported)
    if any(kind not in supported for kind in wanted):
        respond({**body, "error_code": ErrorCode.UNSUPPORTED_VERSION})
        return
    listed: list[tuple[str, int]] = []
    if GROUP in wanted:
        configured = ctx.manager.group_configs.configured(anywhere=cluster_wide(ctx))  # cluster: every node's
        listed += [(group, GROUP) for group in sorted(configured)]
    if BROKER in wanted:
        nodes = (
            [ctx.node_id] if ctx.brokers is None else [b[0] for b in ctx.brokers.brokers(meta.listener_name)]
        )
        listed += [(str(node), BROKER) for node in sorted(nodes)]
    if TOPIC in wanted:
        listed += [(name, TOPIC) for name in sorted(ctx.topics.names())]
    if meta.api_version == 0:  # v0 carries no type: the schema's default (CLIENT_METRICS) is implied
        body["config_resources"] = [{"resource_name": name} for name, _ in listed]
    else:
        body["config_resources"] = [{"resource_name": n, "resource_type": t} for n, t in listed]
    respond(body)
