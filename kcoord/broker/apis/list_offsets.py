"""ListOffsets (2), v1-11 (Kafka 4 removed v0, KIP-896; v0 stays answered for the codec's tests). v0:
old_style_offsets; v1: timestamp/offset; v2: isolation_level, throttle_time_ms; v4: leader epochs; v6:
flexible; v7: MAX_TIMESTAMP (-3); v8: EARLIEST_LOCAL (-4); v9: LATEST_TIERED (-5); v10: timeout_ms (for
remote reads; none here); v11: EARLIEST_PENDING_UPLOAD (-6). A negative timestamp that is no sentinel,
or a sentinel older than its version, is UNSUPPORTED_VERSION for the partition before its existence is
looked at (ReplicaManager.fetchOffset, `isListOffsetsTimestampUnsupported`); without tiered storage -5
and -6 find nothing (UnifiedLog.fetchOffsetByTimestamp: offset -1, epoch -1).

Kafka's `UnifiedLog.fetchOffsetByTimestamp`: latest (-1) is the high watermark (the offset after the
last record, whatever the number of batches), earliest (-2) and earliest-local (-4, no tiered storage
here) the log start offset; a timestamp finds the first record whose timestamp is >= it (time index,
then inside the batch) or answers offset -1 when there is none; max-timestamp (-3) the record with the
largest timestamp. Under READ_COMMITTED (v2+) the last fetchable offset is the last stable offset:
latest answers it, and a timestamp lookup that finds a record at or past it answers none (Kafka's
Partition.fetchOffsetForTimestamp `lastFetchableOffset`, filtered in ReplicaManager.fetchOffset).
"""

from __future__ import annotations

from typing import Any

from kcoord.broker import authz
from kcoord.broker.context import Request, RequestMeta, Respond, ServerContext
from kcoord.coordinator.metadata.acl_model import AclOperation, ResourceType
from kcoord.partition_log.epochs import UNDEFINED_EPOCH, check_current_leader_epoch, epoch_for_offset
from kcoord.partition_log.port import PartitionStore
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

__all__ = ["handle"]

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
# ReplicaManager.timestampMinSupportedVersion: the first version that may carry each sentinel
_SENTINEL_SINCE = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, -5: 9, -6: 11}
_READ_COMMITTED = 1


def handle(ctx: ServerContext, req: Request, meta: RequestMeta, respond: Respond) -> None:
    version = meta.api_version
    described: set[str] | None = None
    if ctx.authorizer is not None:  # KafkaApis.handleListOffsetRequest: DESCRIBE on each topic first
        names = [str(topic["name"]) for topic in req["topics"]]
        described = authz.filter_allowed(ctx, meta, 2, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    topics = []
    for topic in req["topics"]:
        name = str(topic["name"])
        committed = version >= 2 and int(req["isolation_level"]) == _READ_COMMITTED
        if described is not None and name not in described:
            denied = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            partitions = [
                {"partition_index": int(p["partition_index"]), "error_code": denied}
                for p in topic["partitions"]
            ]
        else:
            partitions = [_partition(ctx, name, p, version, committed) for p in topic["partitions"]]
        topics.append({"name": name, "partitions": partitions})
    respond({"topics": topics})


def _partition(
    ctx: ServerContext, name: str, req: dict[str, Any], version: int, committed: bool
) -> dict[str, Any]:
    index = int(req["partition_index"])
    entry: dict[str, Any] = {"partition_index": index}
    timestamp = int(req["timestamp"])
    if timestamp < 0 and version >= 1 and version < _SENTINEL_SINCE.get(timestamp, 1 << 15):
        entry["error_code"] = ErrorCode.UNSUPPORTED_VERSION
        return entry
    log = ctx.data.log(name, index)
    if log is None:
        entry["error_code"] = ctx.data.missing(name, index)
        return entry
    fenced = check_current_leader_epoch(int(req["current_leader_epoch"]), log.leader_epoch)
    if fenced is not ErrorCode.NONE:  # Partition.fetchOffsetForTimestamp -> localLogWithEpochOrThrow
        entry["error_code"] = fenced
        return entry
    try:
        found = _lookup(log, timestamp, committed)
    except StorageFault as fault:  # Kafka: KAFKA_STORAGE_ERROR for the partition (see fetch.py)
        ctx.data.read_failed(fault)
        entry["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        return entry
    entry["error_code"] = ErrorCode.NONE
    if version == 0:
        # v0 asks for up to max_num_offsets segment starts; clients ask for one: the offset itself.
        entry["old_style_offsets"] = [] if found is None else [found[0]]
        return entry
    entry["offset"], entry["timestamp"] = (-1, -1) if found is None else found
    if version >= 4:
        entry["leader_epoch"] = _answer_epoch(log, timestamp, found)
    return entry


def _answer_epoch(log: PartitionStore, timestamp: int, found: tuple[int, int] | None) -> int:
    """The epoch of the answer: the leader's for LATEST (Partition.fetchOffsetForTimestamp), else the
    epoch that wrote the offset (UnifiedLog.fetchOffsetByTimestamp: the earliest entry's for the log
    start, the batch's partitionLeaderEpoch for a timestamp)."""
    if found is None:
        return UNDEFINED_EPOCH
    if timestamp == LATEST:
        return log.leader_epoch
    return epoch_for_offset(log.epoch_history(), found[0])


def _lookup(log: PartitionStore, timestamp: int, committed: bool) -> tuple[int, int] | None:
    """(offset, timestamp) as Kafka answers it; None = no such record (offset -1, timestamp -1)."""
    last_fetchable = log.last_stable_offset if committed else log.high_watermark
    if timestamp == LATEST:
        return last_fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp()
    elif timestamp < 0:
        return None  # -5 (latest tiered), -6 (earliest pending upload): nothing is tiered here
    else:
        found = log.offset_for_timestamp(timestamp)
    return found if found is None or found[0] < last_fetchable else None
