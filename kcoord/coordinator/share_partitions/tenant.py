"""`SharePartitions`: the share-partition tenant, one per node, every (group, topic id, partition).

Kafka splits this between the broker's SharePartition (the in-flight window, acquisition, locks,
acknowledgement; `core/src/main/java/kafka/server/share/SharePartition.java`) and the share
coordinator (durable state; `share-coordinator/.../ShareCoordinatorShard.java`). On one node they are
one tenant of the coordinator log: acquisition stays in memory (as Kafka: acquire persists nothing),
acknowledge, release, lock expiry, reset and delete write ShareSnapshot/ShareUpdate records through
the tenant's `CoordinatorRuntime`, and replay of those records rebuilds the durable state.

What the node holds (the durable states, the windows in memory, cluster mode's hosting) and the answers
made from it alone are `ShareHoldings` (holdings.py); this module is what changes them: the data path,
the writes and the lock timers.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from uuid import UUID

from kcoord.coordinator.runtime import Clock, CoordinatorRuntime, KeyedTimers, RecordLog, ShardPhases, Write
from kcoord.coordinator.share_partitions import acquire as acquisition
from kcoord.coordinator.share_partitions import loading
from kcoord.coordinator.share_partitions import transitions as moves
from kcoord.coordinator.share_partitions.counts import TransitionCounts
from kcoord.coordinator.share_partitions.durable import NotHosted, advance, build_record, write_error_code
from kcoord.coordinator.share_partitions.holdings import Live, ShareHoldings, lock_timer_key
from kcoord.coordinator.share_partitions.model import (
    AcquiredRange,
    LogBounds,
    PartitionAnswer,
    ShareKey,
    ShareSettings,
    StateBatch,
)
from kcoord.coordinator.share_partitions.records import ShareRecord, ShareSnapshot, ShareTombstone
from kcoord.protocol.errors import ErrorCode

__all__ = ["SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT", "NotHosted", "SharePartitions"]

log = logging.getLogger("kcoord.share_partitions")

SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500
"""share.coordinator.snapshot.update.records.per.snapshot (ShareCoordinatorConfig)."""

ChangeListener = Callable[[str, UUID, int], None]


def _shard_key(key: ShareKey) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}"  # Kafka's SharePartitionKey.asCoordinatorKey


class SharePartitions(ShareHoldings):
    """The share partitions of a node. Pure: time is the `Clock`, lock timers the `KeyedTimers`,
    every durable change a `Write` through `runtime` (whose `apply` is the replay path)."""

    def __init__(
        self,
        log: RecordLog[ShareRecord],
        clock: Clock,
        timers: KeyedTimers,
        *,
        phases: ShardPhases | None = None,
        snapshot_every: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT,
        hosted_only: bool = False,
    ) -> None:
        super().__init__(clock, timers, hosted_only=hosted_only)
        self.runtime: CoordinatorRuntime[ShareRecord] = CoordinatorRuntime(log, phases)
        self.runtime.apply = self.apply
        self._snapshot_every = snapshot_every
        self._listeners: list[ChangeListener] = []
        self.counts = TransitionCounts()  # records moved per transition, for the metrics

    # -- the data path ---------------------------------------------------------------------------------
    def next_fetch_offset(
        self, group_id: str, topic_id: UUID, partition: int, settings: ShareSettings, log_bounds: LogBounds
    ) -> int | None:
        """Where the next fetch of this share partition reads from: the first AVAILABLE offset in the
        window, else the end of the window (SharePartition.nextFetchOffset). Initialises the share
        partition on first use (its start offset from `settings.auto_offset_reset` against
        `log_bounds`). None while the state loads or when the in-flight window is full
        (`partition_max_record_locks`): nothing may be acquired now."""
        key = (group_id, topic_id, partition)
        if self.runtime.phase_error(_shard_key(key)) is not None or not self.hosts(topic_id, partition):
            return None
        live = self._load(key, settings, log_bounds)
        live.settings = settings
        loading.follow_log_start(live.window, log_bounds.log_start)
        if not live.window.can_acquire(settings.partition_max_record_locks):
            return None
        return live.window.next_fetch_offset()

    def read_horizon(
        self, group_id: str, topic_id: UUID, partition: int, first_offset: int, max_records: int
    ) -> int:
        """The last offset `acquire` of up to `max_records` records can reach when the log read from
        `next_fetch_offset` starts with a batch at `first_offset`: a read need not go past the first
        batch reaching it (acquire.read_horizon)."""
        live = self._live.get((group_id, topic_id, partition))
        if live is None:
            return first_offset + max_records - 1
        return acquisition.read_horizon(live.window, first_offset, max_records)

    def acquire(
        self,
        group_id: str,
        member_id: str,
        topic_id: UUID,
        partition: int,
        settings: ShareSettings,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        batch_size: int,
        strict: bool,
        skip: Callable[[int], bool] | None = None,
    ) -> list[AcquiredRange]:
        """Acquire for `member_id` the AVAILABLE records of `batches` ((base offset, last offset) as
        read from the log from `next_fetch_offset`, ascending) up to `max_records`
        (SharePartition.acquire): each acquired record's delivery count goes up by one and its
        acquisition lock starts (`record_lock_duration_ms`). Whole batches are acquired unless
        `strict` (ShareFetch v2's record_limit mode) or a batch is already split per offset.
        `skip(offset)` (read_committed) is true for offsets of aborted transactions and control
        markers: they are ARCHIVED, never acquired. Persists nothing but those archived records.
        Returns the acquired ranges, ascending; [] when nothing is (or `next_fetch_offset` was not
        asked first)."""
        live = self._live.get((group_id, topic_id, partition))
        if live is None:
            return []
        live.settings = settings
        request = acquisition.AcquireRequest(
            member_id, batches, max_records, batch_size, strict, settings.delivery_count_limit,
            settings.partition_max_record_locks, self._clock.now_ms() + settings.record_lock_duration_ms,
        )  # fmt: skip
        acquired = acquisition.acquire(live.window, request)
        self.counts.acquired(acquired)
        if skip is not None and acquired:
            acquired, archived = acquisition.archive_skipped(live.window, acquired, skip)
            if archived:  # written at once, so a restart does not deliver them (docs/compat.md)
                self._write(live, archived, self._settled(live, None))
        self._arm(live)
        return acquired

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic_id: UUID,
        partition: int,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        settings: ShareSettings,
        answer: Callable[[ErrorCode], None],
    ) -> None:
        """Acknowledge (first offset, last offset, acknowledge types) batches: one type for the whole
        batch or one per offset; 0 gap, 1 accept, 2 release, 3 reject, 4 renew
        (SharePartition.acknowledge). `answer(NONE)` once the new state is durable;
        INVALID_RECORD_STATE (nothing changed) when a record is not ACQUIRED by `member_id`,
        INVALID_REQUEST for a malformed batch."""
        live = self._live.get((group_id, topic_id, partition))
        if not self.hosts(topic_id, partition):
            answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)  # its leader moved (cluster mode)
            return
        if live is None:
            answer(ErrorCode.INVALID_RECORD_STATE)  # nothing was ever acquired here
            return
        live.settings = settings
        renew_ms = self._clock.now_ms() + settings.record_lock_duration_ms
        error, changed = moves.acknowledge(
            live.window, member_id, batches, settings.delivery_count_limit, renew_ms
        )
        self._arm(live)
        if error is not None:
            answer(error)
        else:
            self.counts.acknowledged(batches)
            if not changed:
                answer(ErrorCode.NONE)
            else:
                self._write(live, [t.batch for t in changed], self._settled(live, changed, answer))

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left the group: every record it holds is released (AVAILABLE again, or ARCHIVED at
        the delivery count limit), durably (SharePartition.releaseAcquiredRecords)."""
        for live in [p for key, p in self._live.items() if key[0] == group_id]:
            changed = moves.release_member(live.window, member_id, live.settings.delivery_count_limit)
            if changed:
                self.counts.released_by_member(t.batch for t in changed)
                self._write(live, [t.batch for t in changed], self._settled(live, changed))

    def expire_locks_now(self, group_id: str | None = None) -> int:
        """Test control: expire every acquisition lock (of `group_id`, or of every group) now, as if its
        timer had fired. Returns how many records were released."""
        lives = [p for key, p in self._live.items() if group_id is None or key[0] == group_id]
        return sum(self._expire(live, None) for live in lives)

    def on_change(self, listener: ChangeListener) -> None:
        """Call `listener(group_id, topic_id, partition)` whenever records of a share partition become
        AVAILABLE again (release, lock expiry, reset) or its start offset moves: parked ShareFetches
        may now acquire records."""
        self._listeners.append(listener)

    def on_loaded(self) -> None:
        """Recovery finished: serve (share partitions come into memory on their first fetch)."""
        self.runtime.phases.loaded()

    def shutdown(self) -> None:
        """Stop the lock timers (shutdown, a test-control reset): nothing of this tenant runs after it;
        fetches are refused from now on."""
        self.runtime.phases.shut_down()
        for key, live in self._live.items():
            live.timer_deadline_ms = None
            self._timers.cancel(lock_timer_key(key))

    # -- operate: AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups -------------------------
    def reset(self, group_id: str, offsets: Mapping[tuple[UUID, int], int], answer: PartitionAnswer) -> None:
        """AlterShareGroupOffsets: each (topic id, partition) starts again at its offset with a new state
        epoch and no in-flight records (the caller checked the group is empty; Kafka's
        InitializeShareGroupState). Answers once durable."""
        records: list[ShareRecord] = []
        for (topic_id, partition), offset in offsets.items():
            key = (group_id, topic_id, partition)
            issued = self._forget_live(key)
            epoch = 0 if issued is None else issued.state_epoch + 1
            now_ms = self._clock.now_ms()
            record = build_record(
                issued, key, state_epoch=epoch, start_offset=offset, new_batches=(), now_ms=now_ms,
                snapshot_every=self._snapshot_every,
            )  # fmt: skip
            assert isinstance(record, ShareSnapshot)  # a new state epoch: always a snapshot
            records.append(dataclasses.replace(record, initial=True))
        self._write_all(list(offsets), records, answer)

    def delete(
        self, group_id: str, partitions: Iterable[tuple[UUID, int]] | None, answer: PartitionAnswer
    ) -> None:
        """Forget the state of the given share partitions of the group, or of all of them when
        `partitions` is None (DeleteShareGroupOffsets / DeleteGroups), with tombstones. Answers once
        durable; a partition without state answers NONE."""
        wanted = self.partitions(group_id) if partitions is None else list(partitions)
        records: list[ShareRecord] = []
        for topic_id, partition in wanted:
            key = (group_id, topic_id, partition)
            if self._forget_live(key) is not None:
                records += [ShareTombstone(*key), ShareTombstone(*key, update=True)]
        self._write_all(wanted, records, answer)

    def delete_topics(self, topic_ids: Iterable[UUID]) -> None:
        """The topics were deleted: the state of every share partition of theirs, of every group, goes
        with tombstones (ShareCoordinatorService.onTopicsDeleted -> ShareCoordinatorShard.
        maybeCleanupShareState); a topic created again has another id and starts fresh. Nobody waits."""
        ids = set(topic_ids)
        keys = sorted(k for k in {*self._live, *self._durable, *self._remote} if k[1] in ids)
        records: list[ShareRecord] = []
        for key in keys:
            if self._forget_live(key) is not None:
                records += [ShareTombstone(*key), ShareTombstone(*key, update=True)]

        def done(error: BaseException | None) -> None:
            for record in records:
                self._live.pop(record.key, None)  # loaded meanwhile from the state before: gone too
            if error is not None:
                log.error("share state of deleted topics %s not deleted: %s", sorted(map(str, ids)), error)

        if records:
            self.runtime.run(Write(records, done))

    # -- internals -------------------------------------------------------------------------------------
    def _write(
        self, live: Live, batches: list[StateBatch], done: Callable[[BaseException | None], None]
    ) -> None:
        """One write of changed state batches with the current start offset (writeShareGroupState)."""
        record = build_record(
            live.issued, live.key, state_epoch=live.state_epoch, start_offset=live.window.start_offset,
            new_batches=batches, now_ms=self._clock.now_ms(), snapshot_every=self._snapshot_every,
            delivery_complete_count=loading.delivery_complete_count(live.window),
        )  # fmt: skip
        live.issued = advance(live.issued, record)
        self.runtime.run(Write([record], done))

    def _settled(
        self,
        live: Live,
        changed: Sequence[moves.Transition] | None,
        answer: Callable[[ErrorCode], None] | None = None,
    ) -> Callable[[BaseException | None], None]:
        """What runs once a write settles: the transitions complete (or roll back), the start offset
        moves, waiting fetches hear of it, then the answer (rollbackOrProcessStateUpdates)."""

        def done(error: BaseException | None) -> None:
            if error is not None:
                log.error(
                    "share state write failed group_id=%s topic_id=%s partition=%d: %s", *live.key, error
                )
                live.issued = self._durable.get(live.key)
            available = moves.complete(changed or (), error is None, self._clock.now_ms())
            if available:
                live.window.find_next_fetch_offset = True
            moved = error is None and live.window.advance_start()
            self._arm(live)
            if available or moved:
                self._changed(live.key)
            if answer is not None:
                answer(write_error_code(error))

        return done

    def _write_all(
        self, partitions: list[tuple[UUID, int]], records: list[ShareRecord], answer: PartitionAnswer
    ) -> None:
        """One write for reset / delete; every partition answers with its outcome once it settles."""
        group_id = records[0].group_id if records else ""

        def done(error: BaseException | None) -> None:
            code = write_error_code(error)
            for record in records:
                self._live.pop(record.key, None)  # loaded meanwhile from the state before: load again
            for topic_id, partition in partitions:
                if group_id:
                    self._changed((group_id, topic_id, partition))
            answer(dict.fromkeys(partitions, code))

        if not records:
            answer(dict.fromkeys(partitions, ErrorCode.NONE))
            return
        self.runtime.run(Write(records, done))

    def _expire(self, live: Live, now_ms: int | None) -> int:
        """Release the acquisition locks due by `now_ms` (None: all) and write what changed; even if the
        write fails the change stands and the start offset moves (releaseAcquisitionLockOnTimeout)."""
        released = moves.expire_locks(live.window, now_ms, live.settings.delivery_count_limit)
        if not released:
            return 0
        self.counts.expired(released)

        def done(error: BaseException | None) -> None:
            if error is not None:
                log.error("share lock expiry write failed group_id=%s topic_id=%s partition=%d", *live.key)
                live.issued = self._durable.get(live.key)
            live.window.advance_start()
            self._changed(live.key)

        self._write(live, released, done)
        self._arm(live)
        self._changed(live.key)
        return sum(b.last_offset - b.first_offset + 1 for b in released)

    def _arm(self, live: Live) -> None:
        """Keep the share partition's lock timer due no later than its earliest lock deadline.

        With no lock left the armed timer stays: it fires, finds nothing due and re-arms for what is held
        then. A consumer's acknowledgements free every lock it holds just before the fetch riding with
        them takes new ones; cancelling the timer there and creating it again a moment later cost a
        timer handle per poll (bench/share_groups.py, docs/benchmarks.md)."""
        if self._live.get(live.key) is not live:
            return  # dropped meanwhile (reset, delete, its leader moved): its timer key is another's now
        deadline = moves.next_lock_deadline(live.window)
        if deadline is None or deadline == live.timer_deadline_ms:
            return
        live.timer_deadline_ms = deadline
        delay_ms = max(0, deadline - self._clock.now_ms())
        self._timers.schedule(live.timer_key, delay_ms, lambda: self._on_lock_timer(live))

    def _on_lock_timer(self, live: Live) -> None:
        if self._live.get(live.key) is not live:
            return
        live.timer_deadline_ms = None
        self._expire(live, self._clock.now_ms())
        self._arm(live)

    def _changed(self, key: ShareKey) -> None:
        for listener in self._listeners:
            listener(*key)
