"""One ShareFetch's fetch part: the session's partitions read from their logs, what the tenant lets the
member acquire, and the long poll until records are there (Kafka's SharePartitionManager.fetchMessages,
DelayedShareFetch, ShareFetchUtils.processFetchResponse).

Each partition is read from the share partition's next fetch offset; the response is sent at once when a
partition failed, when `min_bytes` of acquirable records are there or when `max_wait_ms` is 0, else it
waits, woken by appends to the logs read (their listeners) and by the tenant's `on_change` (records
released, locks expired), until `min_bytes` are there or `max_wait_ms` has passed (DelayedShareFetch's
tryComplete / onExpiration). Records are acquired only when the response is being built, as
DelayedShareFetch.onComplete does. `max_records` counts across the partitions, in session order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kcoord.broker.context import ServerContext
from kcoord.broker.share.batches import ReadBatches, parse_batches
from kcoord.broker.share.edge import ShareEdge
from kcoord.broker.share.settings import READ_COMMITTED
from kcoord.coordinator.share_partitions import AcquiredRange, LogBounds, ShareSettings
from kcoord.partition_log.port import PartitionStore
from kcoord.partition_log.results import ReadResult
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

__all__ = ["FetchLimits", "ShareFetchPart", "partition_entry"]

Entry = dict[str, Any]
TopicPartition = tuple[uuid.UUID, int]


def partition_entry(partition: int, error: ErrorCode = ErrorCode.NONE) -> Entry:
    """A partition's answer as ShareFetchResponse.partitionResponse makes it: empty records
    (`MemoryRecords.EMPTY`, never null: librdkafka 2.16 rejects a null record set as "invalid
    MessageSetSize -1" and drops the whole answer, found by bench/share_groups.py), nothing acquired,
    the current leader unset (0/0) unless NOT_LEADER_OR_FOLLOWER."""
    return {
        "partition_index": partition,
        "error_code": error,
        "error_message": None,
        "acknowledge_error_code": ErrorCode.NONE,
        "acknowledge_error_message": None,
        "current_leader": {"leader_id": 0, "leader_epoch": 0},
        "records": b"",
        "acquired_records": [],
    }


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """The request's limits: bytes, records and the v2 acquire mode (KIP-1206)."""

    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    strict: bool  # share_acquire_mode 1 (record_limit): never more than max_records


class _Target:
    """One session partition this fetch reads: its log, and what its read found."""

    __slots__ = ("entry", "key", "log", "read")

    def __init__(self, key: TopicPartition, log: PartitionStore, entry: Entry) -> None:
        self.key = key
        self.log = log
        self.entry = entry
        self.read: tuple[ReadBatches, list[tuple[int, int]] | None] | None = None


class ShareFetchPart:
    """The fetch of one ShareFetch, over the partitions `targets` resolved (errors already in `entries`)."""

    __slots__ = (
        "_ctx", "_done", "_edge", "_group_id", "_limits", "_listening", "_member_id", "_settings",
        "_targets", "_token", "entries", "finished",
    )  # fmt: skip

    def __init__(
        self,
        ctx: ServerContext,
        edge: ShareEdge,
        group_id: str,
        member_id: str,
        settings: ShareSettings,
        limits: FetchLimits,
    ) -> None:
        self._ctx, self._edge = ctx, edge
        self._group_id, self._member_id = group_id, member_id
        self._settings, self._limits = settings, limits
        self._targets: list[_Target] = []
        self._listening = False
        self._token: int | None = None
        self._done: Callable[[], None] | None = None
        self.entries: dict[TopicPartition, Entry] = {}
        self.finished = False

    def add(self, key: TopicPartition, log: PartitionStore | None, error: ErrorCode) -> None:
        """A session partition: its log to read, or the error it answers."""
        entry = partition_entry(key[1], error)
        self.entries[key] = entry
        if log is not None and error is ErrorCode.NONE:
            self._targets.append(_Target(key, log, entry))

    def start(self, wait_ms: int, done: Callable[[], None]) -> None:
        """Answer (`done`) now or once records come or the wait is over."""
        self._done = done
        # SharePartitionManager.processShareFetch: no partitions, max_records 0 or max_bytes 0 fetch nothing
        wanted = self._targets and self._limits.max_records > 0 and self._limits.max_bytes > 0
        if not wanted:
            self._targets.clear()
        if not wanted or self._ready() or wait_ms <= 0 or self._ctx.shutting_down:
            self._complete()
            return
        self._park(wait_ms)

    def _ready(self) -> bool:
        """DelayedShareFetch.tryComplete: a failed read, or at least `min_bytes` to acquire."""
        total, failed = 0, False
        for target in self._targets:
            size = self._read(target)
            failed = failed or size is None
            total += size or 0
        wanted = max(self._limits.min_bytes, 1)
        if not failed and total < wanted and self._limits.min_bytes > 1:
            # The reads stop where acquisition does; the bytes there are counted up to `max_bytes`.
            total = sum(self._available(target) for target in self._targets)
        return failed or total >= wanted

    def _read(self, target: _Target) -> int | None:
        """Reads the partition from its share partition's next fetch offset, no further than the records
        acquisition may take (SharePartitions.read_horizon); bytes read, None on error."""
        target.read = None
        log, (topic_id, partition) = target.log, target.key
        bounds = LogBounds(log.log_start_offset, log.high_watermark, log.last_stable_offset, _by_time(log))
        partitions = self._edge.partitions
        offset = partitions.next_fetch_offset(self._group_id, topic_id, partition, self._settings, bounds)
        if offset is None:  # loading, or the in-flight window is full: nothing to acquire now
            return 0
        horizon = partitions.read_horizon(
            self._group_id, topic_id, partition, offset, self._limits.max_records
        )
        result = self._log_read(target, offset, horizon)
        if result is None:
            return None
        if not result.records:  # out of range: the tenant moves on with the log start
            return 0
        batches = parse_batches(result.records)
        first = batches.ranges[0][0] if batches.ranges else offset
        wider = partitions.read_horizon(self._group_id, topic_id, partition, first, self._limits.max_records)
        if wider > horizon:  # the log has nothing at the fetch offset (compacted, deleted): read on
            result = self._log_read(target, offset, wider)
            if result is None:
                return None
            batches = parse_batches(result.records)
        target.read = (batches, result.aborted_transactions)
        return len(result.records)

    def _log_read(self, target: _Target, offset: int, max_offset: int | None) -> ReadResult | None:
        """The log read; an empty result when out of range, None (the partition's error set) on a
        storage fault (ReplicaManager.readFromLog: KAFKA_STORAGE_ERROR)."""
        try:
            result = target.log.read(
                offset, self._limits.max_bytes, self._settings.isolation_level, max_offset=max_offset
            )
        except StorageFault as fault:
            self._ctx.data.read_failed(fault)
            target.entry["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            return None
        return _EMPTY if result is None else result

    def _available(self, target: _Target) -> int:
        """The bytes a read unbounded by acquisition finds (up to `max_bytes`): `min_bytes` counts them."""
        if target.read is None:
            return 0
        first = target.read[0].ranges[0][0] if target.read[0].ranges else 0
        result = self._log_read(target, first, None)
        return 0 if result is None else len(result.records)

    def _park(self, wait_ms: int) -> None:
        self._listening = True
        for target in self._targets:
            target.log.add_listener(self._woken)
            self._edge.waiters.add((self._group_id, *target.key), self._woken)
        self._token = self._ctx.delayed.add(wait_ms, self._expired)

    def _woken(self) -> None:
        if not self.finished and self._ready():
            self._complete()

    def _expired(self) -> None:
        self._token = None
        if not self.finished:
            self._ready()
            self._complete()

    def _complete(self) -> None:
        self.finished = True
        self._unpark()
        records_left, bytes_left = self._limits.max_records, self._limits.max_bytes
        for target in self._targets:
            # KIP-74: the first partition with records may exceed max_bytes, later ones stop at it
            if records_left <= 0 or bytes_left <= 0 or target.read is None:
                continue
            acquired = self._acquire(target, records_left)
            if acquired:
                records = target.read[0].slice(acquired)
                target.entry["records"] = records
                target.entry["acquired_records"] = [
                    {
                        "first_offset": r.first_offset,
                        "last_offset": r.last_offset,
                        "delivery_count": r.delivery_count,
                    }
                    for r in acquired
                ]
                records_left -= sum(r.last_offset - r.first_offset + 1 for r in acquired)
                bytes_left -= len(records)
        assert self._done is not None
        self._done()

    def _acquire(self, target: _Target, max_records: int) -> list[AcquiredRange]:
        assert target.read is not None
        batches, aborted = target.read
        skip = batches.skip(aborted or ()) if self._settings.isolation_level == READ_COMMITTED else None
        topic_id, partition = target.key
        return self._edge.partitions.acquire(
            self._group_id, self._member_id, topic_id, partition, self._settings, batches.ranges,
            max_records, self._limits.batch_size, self._limits.strict, skip,
        )  # fmt: skip

    def _unpark(self) -> None:
        if self._token is not None:
            self._ctx.delayed.cancel(self._token)
            self._token = None
        if self._listening:
            self._listening = False
            for target in self._targets:
                target.log.remove_listener(self._woken)
                self._edge.waiters.remove((self._group_id, *target.key), self._woken)


_EMPTY = ReadResult(b"", 0, 0, 0)


def _by_time(log: PartitionStore) -> Callable[[int], int | None]:
    """share.auto.offset.reset=by_duration: the first offset at or after a timestamp."""

    def first_at(timestamp_ms: int) -> int | None:
        found = log.offset_for_timestamp(timestamp_ms)
        return None if found is None else found[0]

    return first_at
