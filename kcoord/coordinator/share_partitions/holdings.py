"""`ShareHoldings`: what a node holds of its share partitions, and what it answers from that alone.

The durable state of every share partition as replay of its ShareSnapshot / ShareUpdate records left it
(Kafka's share coordinator, `ShareCoordinatorShard`), the share partitions in memory (`Live`: the in-flight
window of Kafka's broker-side `SharePartition`), in cluster mode which partitions this node serves and
what it observed of the others, and the answers built from those (describe, start offsets). Nothing here
writes: the writes (acknowledge, release, lock expiry, reset, delete) are `SharePartitions`' (tenant.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

from kcoord.coordinator.runtime import Clock, KeyedTimers
from kcoord.coordinator.share_partitions import loading
from kcoord.coordinator.share_partitions.durable import DurableState, advance
from kcoord.coordinator.share_partitions.model import LogBounds, ShareKey, SharePartitionView, ShareSettings
from kcoord.coordinator.share_partitions.records import ShareRecord
from kcoord.coordinator.share_partitions.window import ShareWindow

__all__ = ["Live", "ShareHoldings", "lock_timer_key"]


def lock_timer_key(key: ShareKey) -> str:
    """The one acquisition-lock timer of a share partition, due at its earliest lock deadline."""
    return f"share-lock:{key[0]}:{key[1]}:{key[2]}"


@dataclass(slots=True)
class Live:
    """One share partition in memory: its window, the state epoch, the durable state as of the records
    issued (what the next record lays over), the settings last seen, the lock timer's deadline."""

    key: ShareKey
    window: ShareWindow
    state_epoch: int
    issued: DurableState | None
    settings: ShareSettings
    timer_deadline_ms: int | None = None
    timer_key: str = field(init=False)
    """lock_timer_key(key), made once: the lock timer moves with every fetch."""

    def __post_init__(self) -> None:
        self.timer_key = lock_timer_key(self.key)


class ShareHoldings:
    """The share partitions a node holds. Pure: time is the `Clock`; the one lock timer of each share
    partition in memory is a `KeyedTimers` key, cancelled when the partition leaves memory."""

    def __init__(self, clock: Clock, timers: KeyedTimers, *, hosted_only: bool = False) -> None:
        self._clock = clock
        self._timers = timers
        self._durable: dict[ShareKey, DurableState] = {}
        self._live: dict[ShareKey, Live] = {}
        # Cluster mode (`hosted_only`): only the (topic id, partition)s `host` loaded are served, those
        # of the partitions this node leads; None: a single node serves every one.
        self._hosted: set[tuple[UUID, int]] | None = set() if hosted_only else None
        self._remote: dict[ShareKey, DurableState] = {}  # `observe`: the state of partitions led elsewhere

    # -- replay ----------------------------------------------------------------------------------------
    def apply(self, record: ShareRecord) -> None:
        """Replay one record into the durable state (recovery and every live write once durable)."""
        if self._hosted is not None and (record.topic_id, record.partition) not in self._hosted:
            return  # settled after its partition's leadership went: the next leader reads it
        state = advance(self._durable.get(record.key), record)
        if state is None:
            self._durable.pop(record.key, None)
        else:
            self._durable[record.key] = state

    def durable(self, group_id: str, topic_id: UUID, partition: int) -> DurableState | None:
        """The share partition's state as its durable records say (tests, the inspector)."""
        return self._durable.get((group_id, topic_id, partition))

    # -- cluster mode: the share partitions of the partitions this node leads ------------------------
    def host(self, topic_id: UUID, partition: int, records: Iterable[ShareRecord]) -> None:
        """Serve every share partition of (topic id, partition) from `records`, its durable state as read
        when this node took the partition's lead (Kafka's SharePartition.maybeInitialize reads the share
        coordinator's state); whatever was held of it before is replaced."""
        self.unhost(topic_id, partition)
        if self._hosted is not None:
            self._hosted.add((topic_id, partition))
        for record in records:
            self.apply(record)

    def unhost(self, topic_id: UUID, partition: int) -> None:
        """Stop serving (topic id, partition): its windows, lock timers and state go (acquisitions were
        in memory only, as on a Kafka broker that stops leading: SharePartitionManager's
        onLeadershipChange removes its share partitions)."""
        if self._hosted is not None:
            self._hosted.discard((topic_id, partition))
        for key in [k for k in {*self._live, *self._durable} if k[1] == topic_id and k[2] == partition]:
            self._forget_live(key)
            self._durable.pop(key, None)

    def observe(self, group_id: str, records: Iterable[ShareRecord]) -> None:
        """The group's state as stored for every partition, read by its coordinator (cluster mode) before
        it describes, resets or deletes share partitions another node leads (Kafka's group coordinator
        asks the share coordinator: ReadShareGroupStateSummary); replaces what was observed before."""
        for key in [k for k in self._remote if k[0] == group_id]:
            del self._remote[key]
        for record in records:
            if record.group_id != group_id or self.hosts(record.topic_id, record.partition):
                continue
            if (state := advance(self._remote.get(record.key), record)) is not None:
                self._remote[record.key] = state

    def hosts(self, topic_id: UUID, partition: int) -> bool:
        """Whether this node serves the share partitions of (topic id, partition) (always on one node)."""
        return self._hosted is None or (topic_id, partition) in self._hosted

    # -- describe ---------------------------------------------------------------------------------------
    def describe(self, group_id: str, topic_id: UUID, partition: int) -> SharePartitionView | None:
        """The share partition as it is now, or None when it has no state."""
        key = (group_id, topic_id, partition)
        if (live := self._live.get(key)) is not None:
            return loading.live_view(key, live.window, live.state_epoch)
        durable = self._durable.get(key) if self.hosts(topic_id, partition) else self._remote.get(key)
        return None if durable is None else loading.durable_view(key, durable)

    def start_offset(self, group_id: str, topic_id: UUID, partition: int) -> int | None:
        """The share partition's start offset (SPSO), None when it has no state
        (DescribeShareGroupOffsets answers -1 for that)."""
        view = self.describe(group_id, topic_id, partition)
        return None if view is None else view.start_offset

    def partitions(self, group_id: str) -> list[tuple[UUID, int]]:
        """The (topic id, partition) of every share partition of the group with state, sorted."""
        remote = (k for k in self._remote if not self.hosts(k[1], k[2]))
        keys = {k for k in (*self._live, *self._durable, *remote) if k[0] == group_id}
        return sorted((k[1], k[2]) for k in keys)

    # -- in memory --------------------------------------------------------------------------------------
    def _load(self, key: ShareKey, settings: ShareSettings, bounds: LogBounds) -> Live:
        """The share partition in memory, initialised from its durable state or from the auto offset
        reset strategy (SharePartition.maybeInitialize)."""
        if (live := self._live.get(key)) is not None:
            return live
        durable = self._durable.get(key)
        if durable is None:
            start = loading.auto_reset_offset(settings.auto_offset_reset, bounds, self._clock.now_ms())
            live = Live(key, ShareWindow(start, start), 0, None, settings)
        else:
            live = Live(key, loading.window_from(durable), durable.state_epoch, durable, settings)
        self._live[key] = live
        return live

    def _forget_live(self, key: ShareKey) -> DurableState | None:
        """Drop the share partition from memory (reset, delete); its state as issued so far."""
        live = self._live.pop(key, None)
        if live is None:
            return self._durable.get(key) if self.hosts(key[1], key[2]) else self._remote.get(key)
        self._timers.cancel(live.timer_key)
        return live.issued
