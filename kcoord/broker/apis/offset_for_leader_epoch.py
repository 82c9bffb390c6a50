"""OffsetForLeaderEpoch (23), v2-4 (Kafka 4 removed v0-1, KIP-896). v2: current_leader_epoch; v3:
replica_id; v4: flexible.

A consumer sends it after a leader change with the epoch of the last batch it consumed (KIP-320); an
end offset below its position means the log was truncated under it. Kafka's path
(KafkaApis.handleOffsetForLeaderEpochRequest -> ReplicaManager.lastOffsetForLeaderEpoch ->
Partition.lastOffsetForLeaderEpoch -> UnifiedLog.endOffsetForEpoch -> LeaderEpochFileCache.endOffsetFor):
- CLUSTER_ACTION on the cluster (a follower), else DESCRIBE on each topic: TOPIC_AUTHORIZATION_FAILED for
  every partition of a topic the caller may not describe;
- an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, one another node leads (cluster mode)
  NOT_LEADER_OR_FOLLOWER; then the current leader epoch fences (-1: none; lower than the leader's
  FENCED_LEADER_EPOCH, higher UNKNOWN_LEADER_EPOCH);
- the end offset of the requested epoch from the partition's epoch history (`end_offset_for`): the log
  end offset for the leader's own epoch, the start of the next known epoch for an older one, none
  (-1, -1) for an unknown epoch.

The epoch history is the partition's (`PartitionStore.epoch_history`, kcoord/partition_log/epochs.py):
`{0: log start}` on a single node, which leads every partition for ever; in cluster mode the lease epochs
that wrote the stored batches, rebuilt from their partitionLeaderEpoch when a leader loads the partition,
so a consumer that read under an earlier leader's epoch gets that epoch's end offset, as from Kafka.
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import CLUSTER_NAME, AclOperation, ResourceType
from kcoord.partition_log.epochs import UNDEFINED_EPOCH, check_current_leader_epoch, end_offset_for
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

__all__ = ["API_KEY", "end_offset_for", "handle"]

API_KEY = 23


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    topics = req["topics"]
    describable: set[str] | None = None
    if ctx.authorizer is not None and not ctx.authorizer.authorize(
        meta.principal, meta.client_host, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    ):  # logIfDenied = false: a consumer is not expected to have CLUSTER_ACTION
        names = [str(t["topic"]) for t in topics]
        describable = authz.filter_allowed(
            ctx, meta, API_KEY, AclOperation.DESCRIBE, ResourceType.TOPIC, names
        )
    results = []
    for topic in topics:
        name = str(topic["topic"])
        denied = describable is not None and name not in describable
        partitions = [
            _refused(int(p["partition"]), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if denied
            else _partition(ctx, name, p)
            for p in topic["partitions"]
        ]
        results.append({"topic": name, "partitions": partitions})
    respond({"topics": results})


def _partition(ctx: ServerContext, name: str, req: dict[str, Any]) -> dict[str, Any]:
    index = int(req["partition"])
    log = ctx.data.log(name, index)
    if log is None:
        return _refused(index, ctx.data.missing(name, index))
    fenced = check_current_leader_epoch(int(req["current_leader_epoch"]), log.leader_epoch)
    if fenced is not ErrorCode.NONE:
        return _refused(index, fenced)
    try:
        history = log.epoch_history()
        epoch, end_offset = end_offset_for(history, int(req["leader_epoch"]), log.log_end_offset)
    except StorageFault as fault:  # as a failed read of the log (fetch.py): KAFKA_STORAGE_ERROR
        ctx.data.read_failed(fault)
        return _refused(index, ErrorCode.KAFKA_STORAGE_ERROR)
    # UnifiedLog.endOffsetForEpoch: an undefined end offset is no answer at all (NONE, -1, -1)
    return {"error_code": ErrorCode.NONE, "partition": index, "leader_epoch": epoch, "end_offset": end_offset}


def _refused(index: int, error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "partition": index, "leader_epoch": UNDEFINED_EPOCH, "end_offset": -1}
