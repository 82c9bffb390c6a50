"""The records of a share group (Kafka's `__consumer_offsets` key types 10-15) and how each one
changes a group: `apply`, the one replay path of recovery and of live heartbeats.

A value of None is a tombstone. Kafka writes, per heartbeat (GroupMetadataManager.shareGroupHeartbeat):
the member's subscription when it changes (ShareGroupMemberMetadata), the group epoch when it is
bumped (ShareGroupMetadata), the target of each member whose target changed and then the target's
epoch (ShareGroupTargetAssignmentMember, ...Metadata), and the member's current assignment when it
moves (ShareGroupCurrentMemberAssignment). A leaving member gets tombstones for its current
assignment, its target and its subscription, then the group epoch is bumped
(shareGroupFenceMember); a deleted group gets its target epoch, group epoch and state-partition
tombstones (ShareGroup.createGroupTombstoneRecords).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from kcoord.coordinator.groups.consumer.model import Assignment
from kcoord.coordinator.groups.share.model import ShareGroup, ShareMember, TopicPartitionsInfo

__all__ = [
    "SHARE_RECORD_CLASSES",
    "ShareGroupEpoch",
    "ShareMemberAssignment",
    "ShareMemberSubscription",
    "ShareRecord",
    "ShareStatePartitions",
    "ShareTargetEpoch",
    "ShareTargetMember",
    "apply",
]


@dataclass(frozen=True, slots=True)
class ShareGroupEpoch:
    """Kafka key type 11, ShareGroupMetadata: the group epoch (None: the group is deleted)."""

    group_id: str
    epoch: int | None
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ShareMemberSubscription:
    """Kafka key type 10, ShareGroupMemberMetadata: `member`'s subscription (None: it left)."""

    group_id: str
    member_id: str
    member: ShareMember | None


@dataclass(frozen=True, slots=True)
class ShareTargetEpoch:
    """Kafka key type 12, ShareGroupTargetAssignmentMetadata: the target assignment's epoch and when
    it was computed."""

    group_id: str
    epoch: int | None
    timestamp_ms: int = 0


@dataclass(frozen=True, slots=True)
class ShareTargetMember:
    """Kafka key type 13, ShareGroupTargetAssignmentMember: one member's target assignment."""

    group_id: str
    member_id: str
    partitions: Assignment | None


@dataclass(frozen=True, slots=True)
class ShareMemberAssignment:
    """Kafka key type 14, ShareGroupCurrentMemberAssignment: `member`'s epochs and partitions."""

    group_id: str
    member_id: str
    member: ShareMember | None


@dataclass(frozen=True, slots=True)
class ShareStatePartitions:
    """Kafka key type 15, ShareGroupStatePartitionMetadata: the share partitions initialized, being
    initialized and being deleted (None: the group is deleted)."""

    group_id: str
    initialized: tuple[TopicPartitionsInfo, ...] | None
    initializing: tuple[TopicPartitionsInfo, ...] = ()
    deleting: tuple[tuple[uuid.UUID, str], ...] = ()


ShareRecord = (
    ShareGroupEpoch
    | ShareMemberSubscription
    | ShareTargetEpoch
    | ShareTargetMember
    | ShareMemberAssignment
    | ShareStatePartitions
)

SHARE_RECORD_CLASSES = (
    ShareGroupEpoch,
    ShareMemberSubscription,
    ShareTargetEpoch,
    ShareTargetMember,
    ShareMemberAssignment,
    ShareStatePartitions,
)


def apply(groups: dict[str, ShareGroup], record: ShareRecord) -> None:
    """Change `groups` as `record` says (Kafka's GroupMetadataManager.replay for these keys)."""
    group = groups.get(record.group_id)
    match record:
        case ShareGroupEpoch(epoch=None):
            groups.pop(record.group_id, None)
            return
        case ShareTargetEpoch(epoch=None) | ShareStatePartitions(initialized=None):
            return  # written with the group's deletion, whose epoch tombstone removes it
        case ShareMemberSubscription(member=None):
            if group is not None:
                group.remove_member(record.member_id)
            return
        case ShareMemberAssignment(member=None):
            return  # the subscription's tombstone, written with it, removes the member
        case ShareTargetMember(partitions=None):
            if group is not None:
                group.target.pop(record.member_id, None)
            return
    if group is None:
        group = groups[record.group_id] = ShareGroup(record.group_id)
    _put(group, record)


def _put(group: ShareGroup, record: ShareRecord) -> None:
    match record:
        case ShareGroupEpoch(epoch=int(epoch)):
            group.group_epoch = epoch
            group.metadata_hash = record.metadata_hash
            group.initialized_since_epoch = False
        case ShareTargetEpoch(epoch=int(epoch)):
            group.assignment_epoch = epoch
            group.assignment_timestamp_ms = record.timestamp_ms
        case ShareTargetMember(partitions=partitions) if partitions is not None:
            group.target[record.member_id] = partitions
        case ShareMemberSubscription(member=ShareMember() as new):
            old = group.members.get(record.member_id) or ShareMember(record.member_id)
            group.put_member(
                replace(
                    old,
                    rack_id=new.rack_id,
                    client_id=new.client_id,
                    client_host=new.client_host,
                    subscribed_topic_names=new.subscribed_topic_names,
                )
            )
        case ShareMemberAssignment(member=ShareMember() as new):
            old = group.members.get(record.member_id) or ShareMember(record.member_id)
            group.put_member(
                replace(
                    old,
                    member_epoch=new.member_epoch,
                    previous_member_epoch=new.previous_member_epoch,
                    assigned=new.assigned,
                )
            )
        case ShareStatePartitions(initialized=initialized) if initialized is not None:
            now_initialized = {info.topic_id: info for info in initialized}
            if _grown(group.initialized, now_initialized):  # not when topics left (deleted, offsets deleted)
                group.initialized_since_epoch = True
            group.initialized = now_initialized
            group.initializing = {info.topic_id: info for info in record.initializing}
            group.deleting = record.deleting


def _grown(before: dict[uuid.UUID, TopicPartitionsInfo], after: dict[uuid.UUID, TopicPartitionsInfo]) -> bool:
    """Some partition is initialized now that was not: the next heartbeat bumps the epoch to assign it."""
    return any(
        topic_id not in before or not info.partitions <= before[topic_id].partitions
        for topic_id, info in after.items()
    )
