"""A share group's ShareGroupStatePartitionMetadata (key 15) beyond initialization: the topics whose share
state is being deleted (`DeletingTopics`) and the topics that no longer exist, as Kafka 4.3.1's
GroupMetadataManager writes them (read from the 4.3.1 jar's bytecode):

- DeleteGroups of a share group (`shareGroupBuildPartitionDeleteRequest`): every initialized,
  initializing and deleting topic that still exists moves to deleting, then the state is deleted and
  the group's tombstones follow.
- DeleteShareGroupOffsets (`sharePartitionsEligibleForOffsetDeletion`): each requested topic that is
  initialized (or already deleting) moves to deleting; once its state is deleted
  (`completeDeleteShareGroupOffsets`) it leaves deleting.
- AlterShareGroupOffsets (`alterShareGroupOffsets` -> `addInitializingTopicsRecords`): the altered
  partitions of known topics join the initializing ones (a group that does not exist is created by the
  record's replay, empty); a topic initializing again leaves deleting. The service then initializes
  them as after a heartbeat.
- A topic deleted (`maybeCleanupShareGroupState`, from GroupCoordinatorService.onMetadataUpdate): it
  leaves the initialized, initializing and deleting topics of every share group holding it; a group
  holding none of the deleted topics writes nothing.

Each function returns the record to write, or None when nothing changes; `records.apply` replays it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping

from kcoord.coordinator.groups.consumer.topics import TopicView
from kcoord.coordinator.groups.share.model import ShareGroup, TopicPartitionsInfo, merged
from kcoord.coordinator.groups.share.records import ShareStatePartitions

__all__ = [
    "all_deleting",
    "cleanup_deleted_topics",
    "complete_offsets_deletion",
    "offsets_altered",
    "start_offsets_deletion",
]

Deleting = tuple[tuple[uuid.UUID, str], ...]


def _record(
    group: ShareGroup,
    initialized: Mapping[uuid.UUID, TopicPartitionsInfo],
    initializing: Mapping[uuid.UUID, TopicPartitionsInfo],
    deleting: Deleting,
) -> ShareStatePartitions:
    return ShareStatePartitions(
        group.group_id, tuple(initialized.values()), tuple(initializing.values()), tuple(sorted(deleting))
    )


def cleanup_deleted_topics(group: ShareGroup, deleted: Collection[uuid.UUID]) -> ShareStatePartitions | None:
    """GroupMetadataManager.maybeCleanupShareGroupState for one group: the deleted topics leave all three
    sets; None if the group held none of them."""
    held = set(group.initialized) | set(group.initializing) | {t for t, _ in group.deleting}
    if not held & set(deleted):
        return None
    return _record(
        group,
        {t: info for t, info in group.initialized.items() if t not in deleted},
        {t: info for t, info in group.initializing.items() if t not in deleted},
        tuple((t, name) for t, name in group.deleting if t not in deleted),
    )


def all_deleting(group: ShareGroup, topics: TopicView) -> ShareStatePartitions | None:
    """shareGroupBuildPartitionDeleteRequest: nothing initialized or initializing, every such topic and
    every one already deleting that still exists deleting (a topic gone is only logged by Kafka); None if
    the group has no share-partition metadata at all."""
    if not (group.initialized or group.initializing or group.deleting):
        return None
    named = {t: info.topic_name for t, info in (*group.initialized.items(), *group.initializing.items())}
    named.update(group.deleting)
    deleting = tuple((t, name) for t, name in named.items() if topics.name_of(t) is not None)
    return _record(group, {}, {}, deleting)


def start_offsets_deletion(
    group: ShareGroup, topic_ids: Collection[uuid.UUID]
) -> tuple[ShareStatePartitions | None, frozenset[uuid.UUID]]:
    """sharePartitionsEligibleForOffsetDeletion: the requested topics that are initialized move to
    deleting (one already deleting stays); returns the record (None if no requested topic has state
    metadata) and the topics eligible."""
    already = dict(group.deleting)
    moving = {t: group.initialized[t].topic_name for t in topic_ids if t in group.initialized}
    eligible = frozenset(moving) | (frozenset(topic_ids) & frozenset(already))
    if not eligible:
        return None, eligible
    initialized = {t: info for t, info in group.initialized.items() if t not in moving}
    return _record(group, initialized, group.initializing, tuple({**already, **moving}.items())), eligible


def complete_offsets_deletion(
    group: ShareGroup, topic_ids: Collection[uuid.UUID]
) -> ShareStatePartitions | None:
    """completeDeleteShareGroupOffsets: the topics whose state is deleted leave deleting."""
    if not any(t in topic_ids for t, _ in group.deleting):
        return None
    deleting = tuple((t, name) for t, name in group.deleting if t not in topic_ids)
    return _record(group, group.initialized, group.initializing, deleting)


def offsets_altered(
    group: ShareGroup | None, group_id: str, altered: Mapping[uuid.UUID, TopicPartitionsInfo]
) -> ShareStatePartitions | None:
    """addInitializingTopicsRecords for AlterShareGroupOffsets: the altered partitions join the
    initializing ones (a group without share-partition metadata gets a record of them alone); a topic
    initializing again leaves deleting. None when nothing is altered."""
    if not altered:
        return None
    if group is None:
        return ShareStatePartitions(group_id, (), tuple(altered.values()), ())
    initializing = merged(group.initializing, altered)
    deleting = tuple((t, name) for t, name in group.deleting if t not in initializing)
    return _record(group, group.initialized, initializing, deleting)
