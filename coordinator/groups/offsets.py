"""Committed offsets of every group (Kafka's OffsetMetadataManager, without transactions).

Offsets are materialised only once their record is durable (`put` / `delete` run from the log's
`on_done`, and from recovery): a fetch never returns an offset the log could lose. While a commit
is in flight its partitions are *pending*, and offset expiry leaves them alone (Kafka: "never expire
a partition with a pending commit").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from coordinator.groups.records import OffsetCommitRecord, OffsetTombstone

__all__ = ["OffsetStore", "TopicPartition"]

TopicPartition = tuple[str, int]


class OffsetStore:
    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartition, OffsetCommitRecord]] = {}
        self._pending: dict[str, Counter[TopicPartition]] = {}
        self._waiters: dict[str, list[Callable[[], None]]] = {}  # require_stable fetches (when_settled)

    # -- materialised offsets ---------------------------------------------------------------------
    def put(self, record: OffsetCommitRecord) -> None:
        self._offsets.setdefault(record.group_id, {})[(record.topic, record.partition)] = record

    def delete(self, group_id: str, topic: str, partition: int) -> None:
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return
        offsets.pop((topic, partition), None)
        if not offsets:
            del self._offsets[group_id]

    def get(self, group_id: str, topic: str, partition: int) -> OffsetCommitRecord | None:
        offsets = self._offsets.get(group_id)
        return None if offsets is None else offsets.get((topic, partition))

    def of_group(self, group_id: str) -> dict[TopicPartition, OffsetCommitRecord]:
        """The group's committed offsets (a live view: do not mutate)."""
        return self._offsets.get(group_id, {})

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._offsets.get(group_id)) or bool(self._pending.get(group_id))

    def group_ids(self) -> Iterator[str]:
        return iter(list(self._offsets))

    def tombstones_for_group(self, group_id: str) -> list[OffsetTombstone]:
        """Every committed offset of the group and every one still in flight: a write in flight is
        visible to the requests after it, as in Kafka's Java coordinator, where a commit is applied
        when written and a later DeleteGroups deletes it too (its tombstone follows it in the log)."""
        committed = self.of_group(group_id)
        pending = [tp for tp in self._pending.get(group_id, ()) if tp not in committed]
        return [OffsetTombstone(group_id, t, p) for (t, p) in (*committed, *pending)]

    def is_known(self, group_id: str, topic: str, partition: int) -> bool:
        """Committed, or a commit of it in flight (see tombstones_for_group)."""
        return self.get(group_id, topic, partition) is not None or self.is_pending(group_id, topic, partition)

    def tombstones_for_topics(self, topics: Iterable[str]) -> list[OffsetTombstone]:
        wanted = set(topics)
        return [
            OffsetTombstone(group_id, t, p)
            for group_id, offsets in self._offsets.items()
            for (t, p) in offsets
            if t in wanted
        ]

    def count(self) -> int:
        return sum(len(o) for o in self._offsets.values())

    # -- in-flight commits ------------------------------------------------------------------------
    def begin_pending(self, records: Iterable[OffsetCommitRecord]) -> None:
        for r in records:
            pending = self._pending.get(r.group_id)
            if pending is None:  # not setdefault(Counter()): that builds a Counter per commit
                pending = self._pending[r.group_id] = Counter()
            pending[(r.topic, r.partition)] += 1

    def end_pending(self, records: Iterable[OffsetCommitRecord]) -> None:
        for r in records:
            pending = self._pending.get(r.group_id)
            if pending is None:
                continue
            pending[(r.topic, r.partition)] -= 1
            if pending[(r.topic, r.partition)] <= 0:
                del pending[(r.topic, r.partition)]
            if not pending:
                del self._pending[r.group_id]

    def has_pending(self, group_id: str) -> bool:
        return bool(self._pending.get(group_id))

    def when_settled(self, group_ids: Sequence[str], callback: Callable[[], None]) -> None:
        """Call `callback` once none of `group_ids` has a commit in flight (at once if none has)."""
        waiting = [g for g in group_ids if self._pending.get(g)]
        if not waiting:
            callback()
            return
        self._waiters.setdefault(waiting[0], []).append(lambda: self.when_settled(waiting[1:], callback))

    def settled(self, group_id: str) -> None:
        """A commit of `group_id` finished (applied or failed): wake who waits for it to settle."""
        if self._waiters and not self._pending.get(group_id):
            for callback in self._waiters.pop(group_id, ()):
                callback()

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        pending = self._pending.get(group_id)
        return pending is not None and pending[(topic, partition)] > 0
