"""AlterReplicaLogDirs (34), v1-2 (v2 flexible; Kafka 4 removed v0, KIP-896): move replicas between
the log directories of this broker (KIP-113).

KafkaApis.handleAlterReplicaLogDirsRequest checks ALTER on the cluster (else every partition
CLUSTER_AUTHORIZATION_FAILED, the request's getErrorResponse); ReplicaManager.alterReplicaLogDirs
answers each partition (the last destination named for it counts): a topic name too long for a future
log's directory name (`<topic>-<partition>.<32 hex>-future` over 255 characters) INVALID_TOPIC_EXCEPTION;
a destination that is not one of the broker's log directories, by absolute path, LOG_DIR_NOT_FOUND; an
offline one KAFKA_STORAGE_ERROR; a partition the broker does not host UNKNOWN_TOPIC_OR_PARTITION, or
REPLICA_NOT_AVAILABLE if it exists elsewhere (cluster mode: another node leads it); the directory
the replica already is in NONE, with nothing to move (Partition.maybeCreateFutureReplica). kcoord has
one log directory, the one DescribeLogDirs reports, so that is every answer a one-directory Kafka
broker gives.
"""

from __future__ import annotations

import os
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["API_KEY", "handle"]

API_KEY = 34
_MAX_DIR_NAME = 255  # UnifiedLog.logFutureDirName's limit (KAFKA-4893)
_FUTURE_SUFFIX = len(".") + 32 + len("-future")


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    wanted: dict[tuple[str, int], str] = {}
    for log_dir in req["dirs"]:
        for topic in log_dir["topics"]:
            for partition in topic["partitions"]:
                wanted[(str(topic["name"]), int(partition))] = str(log_dir["path"])
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, API_KEY, AclOperation.ALTER):
        respond({"results": _results({tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in wanted})})
        return
    respond({"results": _results({tp: _move(ctx, tp[0], tp[1], path) for tp, path in wanted.items()})})


def _move(ctx: ServerContext, topic: str, partition: int, destination: str) -> ErrorCode:
    if len(f"{topic}-{partition}") + _FUTURE_SUFFIX > _MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    logs = ctx.data.logs
    if destination != os.path.abspath(logs.root):
        return ErrorCode.LOG_DIR_NOT_FOUND
    if logs.policy.fatal is not None:  # the one directory is offline (a fatal storage fault)
        return ErrorCode.KAFKA_STORAGE_ERROR
    if ctx.data.log(topic, partition) is None:
        missing = ctx.data.missing(topic, partition)
        # NotLeaderOrFollowerException is answered REPLICA_NOT_AVAILABLE here, "for compatibility"
        return ErrorCode.REPLICA_NOT_AVAILABLE if missing is ErrorCode.NOT_LEADER_OR_FOLLOWER else missing
    return ErrorCode.NONE


def _results(errors: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return [{"topic_name": topic, "partitions": partitions} for topic, partitions in by_topic.items()]
