"""The share-partition tenant's records in the coordinator log (share-coordinator's ShareSnapshot and
ShareUpdate, `share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json`).

A snapshot is the full durable state of one share partition; an update is a delta of state batches
laid over the state before it (ShareCoordinatorShard.generateShareStateRecord: a snapshot when none
exists yet, when the state epoch changes, or every `snapshot_update_records_per_snapshot` updates).
A tombstone forgets the share partition (DeleteShareGroupState).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from kcoord.coordinator.share_partitions.model import ShareKey, StateBatch

__all__ = ["ShareRecord", "ShareSnapshot", "ShareTombstone", "ShareUpdate"]


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    """ShareSnapshotValue: the whole state (start offset, every non-AVAILABLE-at-count-0 batch)."""

    group_id: str
    topic_id: UUID
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    """ShareUpdateValue: batches that replace the same offsets of the state, and the new start offset
    (-1: unchanged)."""

    group_id: str
    topic_id: UUID
    partition: int
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class ShareTombstone:
    """The share partition's state is deleted (its snapshot key written with a null value)."""

    group_id: str
    topic_id: UUID
    partition: int

    @property
    def key(self) -> ShareKey:
        return (self.group_id, self.topic_id, self.partition)


ShareRecord = ShareSnapshot | ShareUpdate | ShareTombstone
