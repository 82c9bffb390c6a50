"""DescribeQuorum (55), v0-2 (flexible): the KRaft metadata quorum, `__cluster_metadata` partition 0,
as `kafka-metadata-quorum.sh describe --status|--replication` (Admin.describeMetadataQuorum) reads it.
v1: each replica's last fetch and last caught-up times (KIP-836); v2: error messages, replica directory
ids and the voters' endpoints (KIP-853).

Kafka's brokers forward it to the controller: ControllerApis.handleDescribeQuorum checks DESCRIBE on
the cluster (else the top-level error CLUSTER_AUTHORIZATION_FAILED with its message,
DescribeQuorumRequest.getTopLevelErrorResponse); KafkaRaftClient.handleDescribeQuorumRequest answers
anything but exactly `__cluster_metadata`-0 with UNKNOWN_TOPIC_OR_PARTITION for each requested partition
(getPartitionLevelErrorResponse) and otherwise describes the leader's state
(RaftUtil.singletonDescribeQuorumResponse: the leader's own fetch and caught-up times are now).

kcoord's metadata store told in that shape: one voter, the node that answers DescribeCluster as the
controller (this node; in cluster mode the node DescribeCluster names), with the other live nodes as
observers, all caught up (one store, PostgreSQL's in cluster mode, with nothing to replicate); the log
end offset and high watermark are the number of topic metadata changes the node has applied (kcoord's
metadata store is no Raft log: docs/compat.md), and the leader epoch 1, the first epoch a KRaft leader
is elected in. Replica directory ids are the zero id (no directory ids, ReplicaKey.NO_DIRECTORY_ID).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.types import ZERO_UUID

__all__ = ["API_KEY", "METADATA_TOPIC", "handle"]

API_KEY = 55
METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
NOT_AUTHORIZED = "Request is not authorized."
# Errors.UNKNOWN_TOPIC_OR_PARTITION.message()
UNKNOWN_PARTITION = "This server does not host this topic-partition."


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, API_KEY, AclOperation.DESCRIBE):
        respond({"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": NOT_AUTHORIZED})
        return
    topics = req["topics"]
    if not _asks_metadata_partition(topics):
        respond({"error_code": ErrorCode.NONE, "topics": [_unknown(t, meta.api_version) for t in topics]})
        return
    respond(_describe(ctx, meta))


def _asks_metadata_partition(topics: list[Any]) -> bool:
    """KafkaRaftClient.hasValidTopicPartition: exactly one topic, the metadata one, with partition 0 only."""
    if len(topics) != 1 or topics[0]["topic_name"] != METADATA_TOPIC:
        return False
    partitions = topics[0]["partitions"]
    return len(partitions) == 1 and int(partitions[0]["partition_index"]) == 0


def _unknown(topic: dict[str, Any], version: int) -> dict[str, Any]:
    message = UNKNOWN_PARTITION if version >= 2 else None
    partitions = [
        {"partition_index": p["partition_index"], "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
         "error_message": message}
        for p in topic["partitions"]
    ]  # fmt: skip
    return {"topic_name": topic["topic_name"], "partitions": partitions}


def _describe(ctx: ServerContext, meta: RequestMeta) -> dict[str, Any]:
    version, now = meta.api_version, ctx.data.now_ms()
    end = ctx.topics.version  # the metadata changes applied: this store's log end (module docstring)
    nodes = _nodes(ctx, meta)
    leader = ctx.node_id if ctx.brokers is None else ctx.brokers.controller_id()
    voters = [_replica(leader, end, now, version)]
    observers = [_replica(node_id, end, now, version) for node_id in sorted(nodes) if node_id != leader]
    partition = {
        "partition_index": 0, "error_code": ErrorCode.NONE, "leader_id": leader, "leader_epoch": LEADER_EPOCH,
        "high_watermark": end, "current_voters": voters, "observers": observers,
    }  # fmt: skip
    body: dict[str, Any] = {
        "error_code": ErrorCode.NONE,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
    }
    if version >= 2 and leader in nodes:
        host, port = nodes[leader]
        listener = {"name": meta.listener_name, "host": host, "port": port}
        body["nodes"] = [{"node_id": leader, "listeners": [listener]}]
    return body


def _replica(node_id: int, end: int, now: int, version: int) -> dict[str, Any]:
    """A caught-up replica: its fetch and catch-up times are now, as the leader reports itself."""
    replica: dict[str, Any] = {"replica_id": node_id, "log_end_offset": end}
    if version >= 1:
        replica["last_fetch_timestamp"] = replica["last_caught_up_timestamp"] = now
    if version >= 2:
        replica["replica_directory_id"] = ZERO_UUID
    return replica


def _nodes(ctx: ServerContext, meta: RequestMeta) -> dict[int, tuple[str, int]]:
    """Every live node's endpoint on the listener the request came in on."""
    if ctx.brokers is None:
        endpoint = ctx.endpoint(meta)
        return {ctx.node_id: (endpoint.host, endpoint.port)}
    return {node_id: (host, port) for node_id, host, port, _ in ctx.brokers.brokers(meta.listener_name)}
