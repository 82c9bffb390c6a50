"""Pending transactional offsets (Kafka's OffsetMetadataManager.pendingTransactionalOffsets and
openTransactionsByGroup), and the records a transaction marker writes for them.

Kafka writes a TxnOffsetCommit as an ordinary OffsetCommit record in a transactional batch of
`__consumer_offsets`; replay keeps it per producer (`replay`, producer id != -1) until the
partition's COMMIT or ABORT control record (`replayEndTransactionMarker`): COMMIT copies each pending
offset into the committed ones unless the committed one was written later in the log, ABORT drops
them. An offset tombstone (OffsetDelete, DeleteGroups, expiry, deleted topics) removes the committed
offset and every producer's pending one of that partition, but the group stays "open" for the
producer until its marker.

Our coordinator log is compacted by (type, key) and knows no transactions, so:

* a pending offset is its own record, TxnOffsetCommitRecord, keyed by (producer id, group, topic,
  partition) (storage type 7): a second TxnOffsetCommit of the same transaction replaces it, as in
  Kafka's per-producer map;
* the marker is one atomic batch: the offsets COMMIT applies, as plain OffsetCommit records (so they
  compact like any commit), then a tombstone for every pending key the producer wrote (so nothing
  of the transaction survives compaction), then, rarely, the pending offsets of *other* producers on
  those partitions that were written after the winner (see `marker_records`).

"Written later in the log" without log offsets: a pending offset remembers the committed record that
was current when it was applied (`base`). It is later than the committed offset exactly when that
record is still the committed one (every commit, plain or from a marker, is a new record object).
In Kafka a committed transactional offset keeps the log offset of its *pending* record, so another
producer's pending offset written between that record and the marker is still later than it; the
marker batch re-writes those after its commits, which gives them the same standing here, live and
on replay. Live writes and replay go through the same `apply` path, so the two cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kcoord.coordinator.groups.records import (
    LogRecord,
    OffsetCommitRecord,
    TxnOffsetCommitRecord,
    TxnOffsetTombstone,
)

__all__ = ["PendingTxnOffsets", "TxnKey"]

TxnKey = tuple[str, str, int]
"""(group id, topic, partition)."""


@dataclass(slots=True)
class _Pending:
    record: TxnOffsetCommitRecord
    seq: int  # apply order among pending offsets
    base: OffsetCommitRecord | None  # the committed offset when this one was applied


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._values: dict[int, dict[TxnKey, _Pending]] = {}  # producer id -> its pending offsets
        self._written: dict[int, set[TxnKey]] = {}  # producer id -> keys with a live type-7 record
        self._open: dict[str, set[int]] = {}  # group -> producers with an open transaction in it
        self._epochs: dict[int, int] = {}  # producer id -> epoch of its latest pending offset
        # group -> (producer id, topic, partition) of its TxnOffsetCommit writes in flight
        self._in_flight: dict[str, Counter[tuple[int, str, int]]] = {}
        self._seq = 0

    # -- replay (live writes and recovery alike) ---------------------------------------------------
    def put(self, record: TxnOffsetCommitRecord, committed: OffsetCommitRecord | None) -> None:
        key = (record.group_id, record.topic, record.partition)
        self._seq += 1
        self._values.setdefault(record.producer_id, {})[key] = _Pending(record, self._seq, committed)
        self._written.setdefault(record.producer_id, set()).add(key)
        self._open.setdefault(record.group_id, set()).add(record.producer_id)
        self._epochs[record.producer_id] = record.producer_epoch

    def remove_written(self, record: TxnOffsetTombstone) -> None:
        """The marker's tombstone of one pending key: the producer's transaction completed there."""
        pid, key = record.producer_id, (record.group_id, record.topic, record.partition)
        values = self._values.get(pid)
        if values is not None:
            values.pop(key, None)
            if not values:
                del self._values[pid]
        written = self._written.get(pid)
        if written is None:
            return
        written.discard(key)
        if not any(k[0] == key[0] for k in written):
            self._close(key[0], pid)
        if not written:
            del self._written[pid]
            self._epochs.pop(pid, None)

    def drop_partition(self, group_id: str, topic: str, partition: int) -> None:
        """An offset tombstone: every producer's pending offset of the partition goes (Kafka's
        replay of a tombstone); the transactions stay open in the group until their markers."""
        key = (group_id, topic, partition)
        for pid in list(self._open.get(group_id, ())):
            values = self._values.get(pid)
            if values is not None and values.pop(key, None) is not None and not values:
                del self._values[pid]

    def unload(self, gone: Callable[[str], bool]) -> None:
        """Cluster mode: forget every pending offset of the groups `gone` names (their shard moved)."""
        for pid in list(self._values):
            values = self._values[pid]
            for key in [k for k in values if gone(k[0])]:
                del values[key]
            if not values:
                del self._values[pid]
        for pid in list(self._written):
            written = self._written[pid]
            written.difference_update([k for k in written if gone(k[0])])
            if not written:
                del self._written[pid]
                self._epochs.pop(pid, None)
        for group_id in [g for g in self._open if gone(g)]:
            del self._open[group_id]
        for group_id in [g for g in self._in_flight if gone(g)]:
            del self._in_flight[group_id]

    def _close(self, group_id: str, pid: int) -> None:
        producers = self._open.get(group_id)
        if producers is not None:
            producers.discard(pid)
            if not producers:
                del self._open[group_id]

    # -- queries ----------------------------------------------------------------------------------
    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Kafka's hasPendingTransactionalOffsets: some open transaction has an offset for it."""
        key = (group_id, topic, partition)
        for pid in self._open.get(group_id, ()):
            values = self._values.get(pid)
            if values is not None and key in values:
                return True
        return False

    def has_open(self, group_id: str) -> bool:
        """Kafka's openTransactionsByGroup.containsKey(group), or a TxnOffsetCommit in flight."""
        return group_id in self._open or bool(self._in_flight.get(group_id))

    def pending_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """The group's partitions with a pending offset, or a TxnOffsetCommit of them in flight."""
        out = {(t, p) for pid in self._open.get(group_id, ()) for (_, t, p) in self._values.get(pid, {})}
        out.update((t, p) for (_, t, p) in self._in_flight.get(group_id, ()))
        return out

    def tombstones(self, group_id: str, topic: str, partition: int) -> list[TxnOffsetTombstone]:
        """What an offset tombstone of the partition writes besides itself: a tombstone for every
        producer's pending offset of it (and one in flight). Replay would already drop those
        offsets at the offset tombstone, but compaction drops that tombstone once a later commit
        of the partition supersedes it, and the pending record must not outlive it."""
        key = (group_id, topic, partition)
        pids = {pid for pid in self._open.get(group_id, ()) if key in self._values.get(pid, {})}
        pids.update(pid for (pid, t, p) in self._in_flight.get(group_id, ()) if (t, p) == (topic, partition))
        return [TxnOffsetTombstone(pid, group_id, topic, partition) for pid in sorted(pids)]

    def group_ids(self) -> set[str]:
        """Groups with a pending offset (Kafka's replay creates a simple group for each)."""
        return {key[0] for values in self._values.values() for key in values}

    def groups_of(self, producer_id: int) -> set[str]:
        return {key[0] for key in self._written.get(producer_id, ())}

    def producer_epoch(self, producer_id: int) -> int | None:
        return self._epochs.get(producer_id)

    def pending_of(self, producer_id: int) -> dict[TxnKey, TxnOffsetCommitRecord]:
        """The producer's pending offsets (tests, introspection)."""
        return {key: p.record for key, p in self._values.get(producer_id, {}).items()}

    def is_later(self, producer_id: int, key: TxnKey, committed: OffsetCommitRecord | None) -> bool:
        """Whether the producer's pending offset was written after `committed` (the current one)."""
        pending = self._values.get(producer_id, {}).get(key)
        return pending is not None and pending.base is committed

    # -- TxnOffsetCommit writes in flight ----------------------------------------------------------
    def begin(self, group_id: str, producer_id: int, partitions: Iterable[tuple[str, int]]) -> None:
        counter = self._in_flight.setdefault(group_id, Counter())
        counter.update((producer_id, t, p) for t, p in partitions)

    def end(self, group_id: str, producer_id: int, partitions: Iterable[tuple[str, int]]) -> None:
        counter = self._in_flight.get(group_id)
        if counter is None:
            return
        counter.subtract((producer_id, t, p) for t, p in partitions)
        for tp in [tp for tp, n in counter.items() if n <= 0]:
            del counter[tp]
        if not counter:
            del self._in_flight[group_id]

    # -- the marker -------------------------------------------------------------------------------
    def marker_records(
        self,
        producer_id: int,
        commit: bool,
        committed: Callable[[str, str, int], OffsetCommitRecord | None],
    ) -> list[LogRecord]:
        """The batch a COMMIT (or ABORT) marker of the producer writes (see the module docstring):
        the offsets it commits, the tombstones of every pending key it wrote, then the other
        producers' pending offsets on committed partitions that were written after the winner."""
        values = self._values.get(producer_id, {})
        winners: list[LogRecord] = []
        later: list[LogRecord] = []
        if commit:
            for key, pending in sorted(values.items()):
                if pending.base is not committed(*key):
                    continue  # a plain commit written after it wins (replayEndTransactionMarker)
                r = pending.record
                winners.append(
                    OffsetCommitRecord(r.group_id, r.topic, r.partition, r.offset, r.leader_epoch,
                                       r.metadata, r.commit_timestamp_ms)
                )  # fmt: skip
                later.extend(self._written_after(producer_id, key, pending.seq))
        tombstones: list[LogRecord] = [
            TxnOffsetTombstone(producer_id, *key) for key in sorted(self._written.get(producer_id, ()))
        ]
        return [*winners, *tombstones, *later]

    def _written_after(self, producer_id: int, key: TxnKey, seq: int) -> list[TxnOffsetCommitRecord]:
        out = []
        for pid in self._open.get(key[0], ()):
            other = self._values.get(pid, {}).get(key)
            if pid != producer_id and other is not None and other.seq > seq:
                out.append(other)
        return [p.record for p in sorted(out, key=lambda p: p.seq)]  # in the order they were written
