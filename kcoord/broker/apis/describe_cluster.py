"""DescribeCluster (60), v0-2 (flexible). v1: endpoint_type (KIP-919); v2: include_fenced_brokers and
each broker's is_fenced (KIP-1073): the live nodes, and with include_fenced_brokers (cluster mode) the
nodes whose lease lapsed a short while ago without a graceful stop, fenced (those Metadata still lists,
kcoord/cluster/membership.py LAPSED_LISTED_S), as a Kafka controller keeps a fenced broker registered.

One broker, this node, which is also the controller. Asking for the controllers' endpoints (type 2)
gets UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers a request meant for a controller.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.apis.metadata import CLUSTER_AUTHORIZED_OPERATIONS
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

_BROKERS = 1


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    controller = ctx.node_id if ctx.brokers is None else ctx.brokers.controller_id()
    body: dict[str, Any] = {"cluster_id": ctx.config.cluster_id, "controller_id": controller, "brokers": []}
    if meta.api_version >= 1 and int(req["endpoint_type"]) != _BROKERS:
        body.update(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message="kcoord is a broker and has no controller endpoints: describe the brokers "
            "(endpoint type 1)",
            endpoint_type=int(req["endpoint_type"]),
        )
        respond(body)
        return
    endpoint = ctx.endpoint(meta)  # the listener the request arrived on (issue 25)
    body["brokers"] = [{"broker_id": ctx.node_id, "host": endpoint.host, "port": endpoint.port, "rack": None}]
    if ctx.brokers is not None:  # cluster mode: every live node
        live = ctx.brokers.brokers(meta.listener_name)
        body["brokers"] = [
            {"broker_id": node_id, "host": host, "port": port, "rack": rack}
            for node_id, host, port, rack in live
        ]
        if meta.api_version >= 2 and req["include_fenced_brokers"]:  # KIP-1073: the lapsed ones, fenced
            ids = {b[0] for b in live}
            body["brokers"] += [
                {"broker_id": node_id, "host": host, "port": port, "rack": rack, "is_fenced": True}
                for node_id, host, port, rack in ctx.brokers.listed(meta.listener_name)
                if node_id not in ids
            ]
    if req["include_cluster_authorized_operations"]:
        ops = CLUSTER_AUTHORIZED_OPERATIONS  # no authorizer: all
        if ctx.authorizer is not None:  # AuthHelper.computeDescribeClusterResponse: 0 without DESCRIBE
            ops = 0
            if authz.cluster_allowed(ctx, meta, 60, AclOperation.DESCRIBE):
                ops = authz.authorized_operations(ctx, meta, ResourceType.CLUSTER, CLUSTER_NAME)
        body["cluster_authorized_operations"] = ops
    respond(body)
