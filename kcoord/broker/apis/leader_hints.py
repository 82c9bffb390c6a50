"""KIP-951: a partition answered NOT_LEADER_OR_FOLLOWER (and, for Fetch, FENCED_LEADER_EPOCH) carries the
leader this broker knows of and that leader's endpoint, so a client goes there without a Metadata round.

Kafka fills them in `KafkaApis.handleProduceRequest` (v10+, NOT_LEADER_OR_FOLLOWER) and
`handleFetchRequest` (v16+, NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH) from `getCurrentLeader`: the
partition's leader id and epoch, and the leader's node on the request's listener when it is alive
(`metadataCache.getAliveBrokerNode`); a leader not alive gives no endpoint, an unknown one -1 / -1.
Here the leader and epoch are `ctx.leadership`'s (the lease view in cluster mode) and the live nodes
`ctx.brokers`'. A single node never answers either error for its own partitions, so this only ever
matters in a cluster; the response is walked only when the version carries the fields.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kcoord.broker.context import RequestMeta, Respond, ServerContext
from kcoord.protocol.errors import ErrorCode

__all__ = ["FETCH_HINTED", "PRODUCE_HINTED", "with_leader_hints"]


def with_leader_hints(
    ctx: ServerContext,
    meta: RequestMeta,
    respond: Respond,
    partitions_key: str,
    errors: Collection[int],
) -> Respond:
    """`respond`, adding `current_leader` to each partition answered with one of `errors` and the
    leaders' endpoints to the response's `node_endpoints`. `partitions_key` names the partition list
    of a topic entry ("partition_responses" in Produce, "partitions" in Fetch)."""

    def hinted(body: dict[str, Any]) -> None:
        endpoints: dict[int, dict[str, Any]] = {}
        for topic in body.get("responses", ()):
            name: str | None = None
            for partition in topic.get(partitions_key, ()):
                if partition.get("error_code") not in errors:
                    continue
                name = name or _name(ctx, topic)
                if name is not None:
                    _hint(ctx, meta, name, partition, endpoints)
        if endpoints:
            body["node_endpoints"] = list(endpoints.values())
        respond(body)

    return hinted


def _name(ctx: ServerContext, topic: dict[str, Any]) -> str | None:
    name = topic.get("name") or topic.get("topic")
    if name:
        return str(name)
    topic_id = topic.get("topic_id")
    return None if topic_id is None else ctx.topics.name_for_id(topic_id)


def _hint(
    ctx: ServerContext,
    meta: RequestMeta,
    name: str,
    partition: dict[str, Any],
    endpoints: dict[int, dict[str, Any]],
) -> None:
    index = int(partition.get("index", partition.get("partition_index", -1)))
    leader = ctx.leadership.leader(name, index)
    if leader < 0:
        partition["current_leader"] = {"leader_id": -1, "leader_epoch": -1}
        return
    partition["current_leader"] = {
        "leader_id": leader,
        "leader_epoch": ctx.leadership.leader_epoch(name, index),
    }
    endpoint = _alive_endpoint(ctx, meta, leader)
    if endpoint is not None:
        endpoints[leader] = endpoint


def _alive_endpoint(ctx: ServerContext, meta: RequestMeta, node: int) -> dict[str, Any] | None:
    if ctx.brokers is None:
        if node != ctx.node_id:
            return None
        endpoint = ctx.endpoint(meta)
        return {"node_id": node, "host": endpoint.host, "port": endpoint.port, "rack": None}
    for node_id, host, port, rack in ctx.brokers.brokers(meta.listener_name):
        if node_id == node:
            return {"node_id": node_id, "host": host, "port": port, "rack": rack}
    return None


PRODUCE_HINTED = frozenset({int(ErrorCode.NOT_LEADER_OR_FOLLOWER)})
FETCH_HINTED = frozenset({int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.FENCED_LEADER_EPOCH)})
