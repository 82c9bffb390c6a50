"""Committed offsets of every group (Kafka's OffsetMetadataManager); the pending transactional
offsets are `txn` (txn_offsets.py).

Offsets are materialised only once their record is durable (`put` / `delete` run from the log's
`on_done`, and from recovery): a fetch never returns an offset the log could lose. While a commit
is in flight its partitions are *pending*, and offset expiry leaves them alone (Kafka: "never expire
a partition with a pending commit"). Every write of a group's offsets in flight (commits, and the
tombstones of OffsetDelete, DeleteGroups, expiry and DeleteTopics) is tracked too: a require_stable
fetch waits for them (`when_settled`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from kcoord.coordinator.groups.records import (
    OffsetCommitRecord,
    OffsetTombstone,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)
from kcoord.coordinator.groups.txn_offsets import PendingTxnOffsets

__all__ = ["OffsetStore", "TopicPartition"]

TopicPartition = tuple[str, int]


class OffsetStore:
    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartition, OffsetCommitRecord]] = {}
        self.by_group: Mapping[str, dict[TopicPartition, OffsetCommitRecord]] = self._offsets
        """Read-only view of the committed offsets by group (no call on the commit hot path)."""
        self._pending: dict[str, Counter[TopicPartition]] = {}
        self._next_write = 0
        self._latest_write: dict[str, int] = {}  # group id -> its latest offset write in flight
        self._waiters: dict[int, list[Callable[[], None]]] = {}  # write id -> require_stable fetches
        self.txn = PendingTxnOffsets()
        """Pending transactional offsets (TxnOffsetCommit until its transaction's marker)."""

    # -- materialised offsets ---------------------------------------------------------------------
    def put(self, record: OffsetCommitRecord) -> None:
        self._offsets.setdefault(record.group_id, {})[(record.topic, record.partition)] = record

    def delete(self, group_id: str, topic: str, partition: int) -> None:
        """An offset tombstone: the committed offset and every pending transactional one of the
        partition (OffsetMetadataManager.replay of a tombstone)."""
        self.txn.drop_partition(group_id, topic, partition)
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return
        offsets.pop((topic, partition), None)
        if not offsets:
            del self._offsets[group_id]

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Cluster mode: forget the committed and pending offsets of the groups `gone` names."""
        for group_id in [g for g in self._offsets if gone(g)]:
            del self._offsets[group_id]
        for group_id in [g for g in self._pending if gone(g)]:
            del self._pending[group_id]
        for group_id in [g for g in self._latest_write if gone(g)]:
            del self._latest_write[group_id]
        self.txn.unload(gone)

    def put_pending(self, record: TxnOffsetCommitRecord) -> None:
        """A pending transactional offset, later than the offset committed now."""
        self.txn.put(record, self.get(record.group_id, record.topic, record.partition))

    def get(self, group_id: str, topic: str, partition: int) -> OffsetCommitRecord | None:
        offsets = self._offsets.get(group_id)
        return None if offsets is None else offsets.get((topic, partition))

    def of_group(self, group_id: str) -> dict[TopicPartition, OffsetCommitRecord]:
        """The group's committed offsets (a live view: do not mutate)."""
        return self._offsets.get(group_id, {})

    def has_offsets(self, group_id: str) -> bool:
        if self._offsets.get(group_id) or self._pending.get(group_id):
            return True
        return self.txn.has_open(group_id)

    def group_ids(self) -> Iterator[str]:
        """Groups with committed or pending transactional offsets."""
        return iter([*self._offsets, *(g for g in self.txn.group_ids() if g not in self._offsets)])

    def tombstones_for_group(self, group_id: str) -> list[OffsetTombstone | TxnOffsetTombstone]:
        """Every committed offset of the group and every one still in flight: a write in flight is
        visible to the requests after it, as in Kafka's Java coordinator, where a commit is applied
        when written and a later DeleteGroups deletes it too (its tombstone follows it in the log)."""
        committed = self.of_group(group_id)
        pending = [tp for tp in self._pending.get(group_id, ()) if tp not in committed]
        # and the partitions only a transaction has an offset for (OffsetMetadataManager.deleteAllOffsets)
        known = {*committed, *pending}
        txn = sorted(tp for tp in self.txn.pending_partitions(group_id) if tp not in known)
        return self.with_pending([OffsetTombstone(group_id, t, p) for (t, p) in (*committed, *pending, *txn)])

    def with_pending(
        self, tombstones: Iterable[OffsetTombstone]
    ) -> list[OffsetTombstone | TxnOffsetTombstone]:
        """Each offset tombstone, followed by the tombstones of the pending transactional offsets it
        deletes (PendingTxnOffsets.tombstones: so that compaction cannot bring them back)."""
        out: list[OffsetTombstone | TxnOffsetTombstone] = []
        for tombstone in tombstones:
            out.append(tombstone)
            if self.txn.has_open(tombstone.group_id):
                out.extend(self.txn.tombstones(tombstone.group_id, tombstone.topic, tombstone.partition))
        return out

    def is_known(self, group_id: str, topic: str, partition: int) -> bool:
        """Committed, a commit of it in flight (see tombstones_for_group), or a transactional offset
        pending (OffsetMetadataManager.deleteOffsets)."""
        return (
            self.get(group_id, topic, partition) is not None
            or self.is_pending(group_id, topic, partition)
            or (topic, partition) in self.txn.pending_partitions(group_id)
        )

    def tombstones_for_topics(self, topics: Iterable[str]) -> list[OffsetTombstone | TxnOffsetTombstone]:
        wanted = set(topics)
        out: list[OffsetTombstone] = [
            OffsetTombstone(group_id, t, p)
            for group_id, offsets in self._offsets.items()
            for (t, p) in offsets
            if t in wanted
        ]
        # pending transactional offsets too (OffsetMetadataManager.onPartitionsDeleted)
        seen = set(out)
        for group_id in sorted(self.txn.group_ids()):
            for t, p in sorted(self.txn.pending_partitions(group_id)):
                tombstone = OffsetTombstone(group_id, t, p)
                if t in wanted and tombstone not in seen:
                    out.append(tombstone)
        return self.with_pending(out)

    def count(self) -> int:
        return sum(len(o) for o in self._offsets.values())

    # -- in-flight commits ------------------------------------------------------------------------
    def has_pending(self, group_id: str) -> bool:
        return bool(self._pending.get(group_id))

    # -- a commit in flight: its partitions pending and its write tracked, in one step (hot path) ----
    def begin_commit(self, group_id: str, records: Iterable[OffsetCommitRecord]) -> int:
        """Mark a commit's partitions pending and track its write (all its records are of
        `group_id`): its write id. One call per commit, not two: this is the commit hot path."""
        pending = self._pending.get(group_id)
        if pending is None:  # not setdefault(Counter()): that builds a Counter per commit
            pending = self._pending[group_id] = Counter()
        for r in records:
            pending[(r.topic, r.partition)] += 1
        write_id = self._next_write
        self._next_write = write_id + 1
        self._latest_write[group_id] = write_id
        return write_id

    def end_commit(self, group_id: str, records: Iterable[OffsetCommitRecord]) -> None:
        """The commit's append finished: its partitions are no longer pending (before its undo,
        which asks whether a group it made is bare)."""
        pending = self._pending.get(group_id)
        if pending is None:
            return
        for r in records:
            key = (r.topic, r.partition)
            left = pending[key] - 1
            if left > 0:
                pending[key] = left
            else:
                del pending[key]
        if not pending:
            del self._pending[group_id]

    def end_commit_write(self, group_id: str, write_id: int) -> None:
        """The commit is applied or undone and answered: wake the fetches that wait for its write."""
        latest = self._latest_write
        if latest.get(group_id) == write_id:
            del latest[group_id]
        if self._waiters:
            for callback in self._waiters.pop(write_id, ()):
                callback()

    # -- offset writes in flight (require_stable fetches wait for them) -----------------------------
    def begin_write(self, group_ids: Iterable[str]) -> int:
        """An append that writes offsets of `group_ids` (commits or tombstones) is in flight: its id."""
        write_id = self._next_write
        self._next_write = write_id + 1
        latest = self._latest_write
        for group_id in group_ids:
            latest[group_id] = write_id
        return write_id

    def end_write(self, write_id: int, group_ids: Iterable[str]) -> None:
        """That append settled (applied or failed): wake the fetches that wait for it."""
        latest = self._latest_write
        for group_id in group_ids:
            if latest.get(group_id) == write_id:
                del latest[group_id]
        if self._waiters:
            for callback in self._waiters.pop(write_id, ()):
                callback()

    def when_settled(self, group_ids: Sequence[str], callback: Callable[[], None]) -> None:
        """Call `callback` once every write of these groups' offsets now in flight has settled (at
        once if none is), not waiting for later ones. Appends settle in append order (RecordLog's
        contract), so that is when the latest of them settles."""
        latest = self._latest_write
        last = max((latest[g] for g in group_ids if g in latest), default=None)
        if last is None:
            callback()
            return
        self._waiters.setdefault(last, []).append(callback)

    def has_write_in_flight(self, group_id: str) -> bool:
        """Some write of the group's offsets (commit, tombstones, TxnOffsetCommit, marker) is in flight."""
        return group_id in self._latest_write

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        pending = self._pending.get(group_id)
        return pending is not None and pending[(topic, partition)] > 0
