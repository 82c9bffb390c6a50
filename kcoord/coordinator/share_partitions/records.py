"""The share-partition tenant's records in the coordinator log (share-coordinator's ShareSnapshot and
ShareUpdate, `share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json`).

A snapshot is the full durable state of one share partition; an update holds the state batches changed
since that snapshot, laid over it (ShareCoordinatorShard.generateShareStateRecord: a snapshot when none
exists yet, when the state epoch changes, or after `snapshot_every` updates; `durable.py`).
kcoord's update is cumulative (every batch changed since the snapshot, not only the last write's): the
coordinator log is compacted by key, so only the newest update of a share partition survives, where
Kafka's `__share_group_state` keeps every update until it prunes the log (docs/compat.md).
A tombstone forgets the share partition (DeleteShareGroupState).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from kcoord.coordinator.share_partitions.model import ShareKey, StateBatch

__all__ = ["ShareRecord", "ShareSnapshot", "ShareTombstone", "ShareUpdate"]


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """ShareSnapshotValue: the whole durable state (start offset, the state batches at or past it)."""

    group_id: str
    topic_id: UUID
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    create_timestamp_ms: int = -1
    write_timestamp_ms: int = -1
    delivery_complete_count: int = -1
    initial: bool = field(default=False, compare=False)
    """Written by the group's coordinator (a reset: Kafka's InitializeShareGroupState), not by the
    partition's leader: in cluster mode it may be another node's partition. Not stored."""

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    """ShareUpdateValue: the batches changed since snapshot `snapshot_epoch`, which replace the same
    offsets of it, and the start offset (-1: the snapshot's)."""

    group_id: str
    topic_id: UUID
    partition: int
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class ShareTombstone:
    """The share partition's state is deleted: its snapshot key (Kafka's tombstone) and, because the
    newest update of a share partition outlives compaction here, its update key (`update`) written
    with a null value. A delete writes both."""

    group_id: str
    topic_id: UUID
    partition: int
    update: bool = False

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


ShareRecord = ShareSnapshot | ShareUpdate | ShareTombstone
