"""DescribeLogDirs (35), v1-5 (Kafka 4 removed v0, KIP-896). v1: throttling only; v2: flexible; v3:
top-level error code; v4: the volume's total and usable bytes (KIP-827); v5: is_cordoned (KIP-1066),
always false: kcoord's one directory is never cordoned.

KafkaApis.handleDescribeLogDirsRequest: without DESCRIBE on the cluster, no results and (v3+)
CLUSTER_AUTHORIZATION_FAILED; otherwise ReplicaManager.describeLogDirs answers one result per log
directory. kcoord has one, the directory holding the `<topic>-<partition>` directories
(`DATA_DIR/topics`), reported by its absolute path as Kafka does (`toAbsolutePath`). Under it, the
requested partitions (null: all) that exist, each topic with at least one, every partition with the
size of its segment files (UnifiedLog.size), offset lag 0 (Kafka's max(high watermark - log end
offset, 0) for a current log) and is_future_key false (there is no AlterReplicaLogDirs). A partition
whose log was never opened (kcoord creates logs on first use, Kafka at creation) is an empty log:
size 0. Total and usable bytes are the volume's (Java's FileStore.getTotalSpace / getUsableSpace:
statvfs blocks and blocks available to the user). A log directory that cannot be read, or after a
fatal storage fault, is KAFKA_STORAGE_ERROR for the directory, as Kafka answers for an offline one.
"""

from __future__ import annotations

import os
from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation
from kcoord.protocol.errors import ErrorCode

__all__ = ["handle"]

API_KEY = 35
_NO_LAG = 0


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    if ctx.authorizer is not None and not authz.cluster_allowed(ctx, meta, API_KEY, AclOperation.DESCRIBE):
        body: dict[str, Any] = {"results": []}
        if meta.api_version >= 3:
            body["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        respond(body)
        return
    respond({"results": [_log_dir(ctx, _wanted(ctx, req["topics"]), meta.api_version)]})


def _wanted(ctx: ServerContext, topics: list[Any] | None) -> dict[str, list[int]]:
    """Topic -> its existing partitions the request names (all of them when `topics` is null)."""
    if topics is None:
        return {t.name: list(range(t.num_partitions)) for t in ctx.topics.all()}
    wanted: dict[str, set[int]] = {}
    for topic in topics:
        name = str(topic["topic"])
        for partition in topic["partitions"]:
            if ctx.topics.has_partition(name, int(partition)):
                wanted.setdefault(name, set()).add(int(partition))
    return {name: sorted(partitions) for name, partitions in sorted(wanted.items())}


def _log_dir(ctx: ServerContext, wanted: dict[str, list[int]], version: int) -> dict[str, Any]:
    logs = ctx.data.logs
    path = os.path.abspath(logs.root)
    try:
        if logs.policy.fatal is not None:
            raise OSError(f"log directory {path} is offline")
        volume = os.statvfs(path)
    except OSError:
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path, "topics": []}
    topics = []
    for name, partitions in wanted.items():
        entries = []
        for index in partitions:
            plog = logs.get(name, index)
            size = 0 if plog is None else plog.size
            entries.append({"partition_index": index, "partition_size": size, "offset_lag": _NO_LAG})
        topics.append({"name": name, "partitions": entries})
    result: dict[str, Any] = {"error_code": ErrorCode.NONE, "log_dir": path, "topics": topics}
    if version >= 4:
        result["total_bytes"] = volume.f_blocks * volume.f_frsize
        result["usable_bytes"] = volume.f_bavail * volume.f_frsize
    return result
