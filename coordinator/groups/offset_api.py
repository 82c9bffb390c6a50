"""OffsetCommit (8) v0-9, OffsetFetch (9) v0-9, OffsetDelete (47) v0 (Kafka's OffsetMetadataManager).

A commit's response is sent only after its records are durable; offsets become visible to fetches
at the same moment (`Runtime.write` applies them once durable, through the same path as recovery).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordinator.groups.config import RequestMeta
from coordinator.groups.errors import APPEND_FAILED, ErrorCode
from coordinator.groups.group import Group
from coordinator.groups.member import Request, Respond
from coordinator.groups.rebalance import Rebalancer
from coordinator.groups.records import OffsetCommitRecord, OffsetTombstone
from coordinator.groups.runtime import Runtime
from coordinator.groups.state import GroupState
from coordinator.groups.subscriptions import CONSUMER_PROTOCOL_TYPE

__all__ = ["OffsetDeleteRespond", "OffsetDeleteTopics", "OffsetHandler"]

OffsetDeleteTopics = Sequence[tuple[str, Sequence[int]]]
"""OffsetDelete's request as the group logic takes it: (topic, partitions) pairs."""
OffsetDeleteRespond = Callable[[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]], None]
"""OffsetDelete's answer: a group-level error (NONE, or it replaces every partition), then per
topic (partition, error) pairs in request order."""


class OffsetHandler:
    def __init__(self, rt: Runtime, rebalancer: Rebalancer) -> None:
        self.rt = rt
        self.rb = rebalancer

    # -- OffsetCommit -----------------------------------------------------------------------------
    def commit(self, req: Request, meta: RequestMeta, respond: Respond) -> None:
        topics: list[Request] = req.get("topics") or []
        error = self._validate_commit(req, meta.api_version)
        if error is not None:
            respond(_commit_response(topics, lambda _t, _p: error))
            return
        now = self.rt.now_ms()
        records, errors = [], {}
        for topic in topics:
            for p in topic.get("partitions") or []:
                key = (topic["name"], p["partition_index"])
                metadata = p.get("committed_metadata") or ""
                if _java_length(metadata) > self.rt.config.offset_metadata_max_bytes:
                    errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                    continue
                records.append(_commit_record(req, meta.api_version, topic["name"], p, metadata, now))
        if not records:
            respond(_commit_response(topics, lambda t, p: errors.get((t, p), ErrorCode.NONE)))
            return
        self.rt.offsets.begin_pending(records)

        def on_done(exc: BaseException | None) -> None:  # applied already if durable (Runtime.write)
            offsets = self.rt.offsets
            offsets.end_pending(records)
            # Every append failure is a storage fault: NOT_COORDINATOR, as Kafka (errors.py).
            failed = ErrorCode.NONE if exc is None else APPEND_FAILED
            respond(_commit_response(topics, lambda t, p: errors.get((t, p), failed)))
            offsets.settled(records[0].group_id)  # one request commits for one group

        self.rt.write(records, on_done)

    def _validate_commit(self, req: Request, version: int) -> ErrorCode | None:
        """Kafka's validateOffsetCommit; creates a simple (offset-only) group for generation < 0."""
        error = self.rt.phase_error()
        if error is not None:
            return error
        # "" is a group id like any other here: Kafka accepts it for backwards compatibility
        # (GroupCoordinatorService.commitOffsets refuses only a null one, which the schema forbids).
        group_id = str(req.get("group_id") or "")
        generation = _generation(req)
        group = self.rt.group(group_id)
        if group is None:
            if generation >= 0:
                return ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
            group = self.rt.get_or_create_group(group_id)
        return self._validate_against(group, req, generation)

    def _validate_against(self, group: Group, req: Request, generation: int) -> ErrorCode | None:
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is GroupState.EMPTY:
            return None  # admin tools, assign()-mode consumers
        member_id = str(req.get("member_id") or "")
        iid = req.get("group_instance_id")
        if generation < 0 and not member_id and iid is None:
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members may commit to a non-empty group
        error = group.validate_member(member_id, iid)
        if error is None and generation != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is None and group.state is GroupState.COMPLETING_REBALANCE:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is None:
            # A commit counts as liveness in Stable and PreparingRebalance.
            self.rb.schedule_session(group, member_id, group.members[member_id].session_timeout_ms)
        return error

    # -- OffsetFetch ------------------------------------------------------------------------------
    def fetch(self, req: Request, meta: RequestMeta, respond: Respond) -> None:
        if meta.api_version >= 7 and req.get("require_stable"):
            # Java's GroupCoordinatorService.fetchOffsets runs a require_stable fetch as a write
            # operation: it is answered once every write before it is durable, so it never returns
            # an offset older than a commit in flight. (Scala answered UNSTABLE_OFFSET_COMMIT.)
            groups = [str(g.get("group_id") or "") for g in req.get("groups") or []]
            if meta.api_version < 8:
                groups = [str(req.get("group_id") or "")]
            self.rt.offsets.when_settled(groups, lambda: self._fetch(req, meta, respond))
            return
        self._fetch(req, meta, respond)

    def _fetch(self, req: Request, meta: RequestMeta, respond: Respond) -> None:
        version = meta.api_version
        if version >= 8:
            groups = [
                self._fetch_group(g.get("group_id") or "", g.get("topics"), version)
                for g in req.get("groups") or []
            ]
            for g in groups:  # a group-level error carries no topics (Kafka's OffsetFetchResponseGroup)
                if g["error_code"]:
                    g["topics"] = []
            respond({"groups": groups})
            return
        entry = self._fetch_group(str(req.get("group_id") or ""), req.get("topics"), version)
        error, topics = entry["error_code"], entry["topics"]
        if version < 2:
            # v0-1 have no top-level error: Kafka copies the group error into every partition.
            if error:
                for t in topics:
                    for p in t["partitions"]:
                        p["error_code"] = error
            respond({"topics": topics})
            return
        respond({"topics": [] if error else topics, "error_code": error})

    def _fetch_group(self, group_id: str, topics: list[Request] | None, version: int) -> dict[str, Any]:
        """One group's offsets; `topics` None = all. Never UNSTABLE_OFFSET_COMMIT: that is for
        pending transactional commits, and there are no transactions (compat.md)."""
        # "" is accepted, as Kafka does (GroupCoordinatorService.fetchOffsets: only null is invalid).
        error = self.rt.phase_error()
        if error is not None:
            out = [
                {
                    "name": t["name"],
                    "partitions": [
                        _fetch_partition(version, i, None) for i in t.get("partition_indexes") or []
                    ],
                }
                for t in topics or []
            ]
            return {"group_id": group_id, "topics": out, "error_code": int(error)}
        committed = self.rt.offsets.of_group(group_id)
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for t, p in committed:
                by_topic.setdefault(t, []).append(p)
            topics = [{"name": t, "partition_indexes": sorted(ps)} for t, ps in sorted(by_topic.items())]
        out = [
            {
                "name": t["name"],
                "partitions": [
                    _fetch_partition(version, i, committed.get((t["name"], i)))
                    for i in t.get("partition_indexes") or []
                ],
            }
            for t in topics
        ]
        return {"group_id": group_id, "topics": out, "error_code": 0}

    # -- OffsetDelete -----------------------------------------------------------------------------
    def delete(self, group_id: str, topics: OffsetDeleteTopics, respond: OffsetDeleteRespond) -> None:
        """OffsetDelete of partitions the server knows (unknown ones never get here): a group error
        and no topics, or per partition NONE / GROUP_SUBSCRIBED_TO_TOPIC, once the tombstones are
        durable (OffsetMetadataManager.deleteOffsets)."""
        group = self.rt.group(group_id)
        error = self._delete_error(group_id, group)
        if error is not None or group is None:
            respond(error or ErrorCode.GROUP_ID_NOT_FOUND, [])
            return
        subscribed = {
            name for name, _ in topics if group.state is not GroupState.EMPTY and group.is_subscribed_to(name)
        }
        is_known = self.rt.offsets.is_known  # in flight too
        tombstones = [
            OffsetTombstone(group_id, name, partition)
            for name, partitions in topics
            if name not in subscribed
            for partition in partitions
            if is_known(group_id, name, partition)
        ]
        results = [
            (
                name,
                [
                    (p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if name in subscribed else ErrorCode.NONE)
                    for p in ps
                ],
            )
            for name, ps in topics
        ]
        if not tombstones:
            respond(ErrorCode.NONE, results)
            return

        def on_done(exc: BaseException | None) -> None:
            if exc is None:
                respond(ErrorCode.NONE, results)
            else:
                respond(APPEND_FAILED, [])

        self.rt.write(tombstones, on_done)

    def _delete_error(self, group_id: str, group: Group | None) -> ErrorCode | None:
        """OffsetDelete group checks: missing -> GROUP_ID_NOT_FOUND; a non-empty group may only
        delete offsets if it is a consumer group (per topic, below) -> else NON_EMPTY_GROUP."""
        error = self.rt.phase_error()
        if error is not None:
            return error
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.NON_EMPTY_GROUP
        return None


def _java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, what Kafka compares with offset.metadata.max.bytes
    (OffsetMetadataManager.isMetadataInvalid). Characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _generation(req: Request) -> int:
    value = req.get("generation_id_or_member_epoch", req.get("generation_id", -1))
    return value if isinstance(value, int) else -1


def _commit_record(
    req: Request, version: int, topic: str, p: Request, metadata: str, now: int
) -> OffsetCommitRecord:
    """Commit timestamp = now (v1: the request's, unless -1); explicit expiry only for v2-4 (KIP-211)."""
    commit_ts = p.get("commit_timestamp", -1) if version == 1 else -1
    retention = req.get("retention_time_ms", -1) if 2 <= version <= 4 else -1
    return OffsetCommitRecord(
        group_id=str(req["group_id"]),
        topic=topic,
        partition=p["partition_index"],
        offset=p["committed_offset"],
        leader_epoch=p.get("committed_leader_epoch", -1) if version >= 6 else -1,
        metadata=metadata,
        commit_timestamp_ms=now if commit_ts in (None, -1) else commit_ts,
        expire_timestamp_ms=-1 if retention in (None, -1) else now + retention,
    )


def _commit_response(topics: list[Request], error_of: Callable[[str, int], ErrorCode]) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": int(error_of(t["name"], p["partition_index"])),
                    }
                    for p in t.get("partitions") or []
                ],
            }
            for t in topics
        ]
    }


def _fetch_partition(version: int, index: int, record: OffsetCommitRecord | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "partition_index": index,
        "committed_offset": -1 if record is None else record.offset,
        "metadata": "" if record is None else record.metadata,
        "error_code": 0,
    }
    if version >= 5:
        entry["committed_leader_epoch"] = -1 if record is None else record.leader_epoch
    return entry
