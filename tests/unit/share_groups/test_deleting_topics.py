"""A share group's ShareGroupStatePartitionMetadata after its initialization, as Kafka 4.3.1's
GroupMetadataManager writes it (read from the jar's bytecode): a deleted topic leaves every set
(maybeCleanupShareGroupState), DeleteShareGroupOffsets moves a topic to DeletingTopics and out again
(sharePartitionsEligibleForOffsetDeletion, completeDeleteShareGroupOffsets), DeleteGroups moves every
topic to DeletingTopics before the tombstones (shareGroupBuildPartitionDeleteRequest). Each is
replayed through the storage codec by a restart."""

from __future__ import annotations

import uuid

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.model import ShareGroup
from kcoord.coordinator.groups.share.records import ShareGroupEpoch, ShareStatePartitions
from tests.unit.share_groups.conftest import T1, T2, Node


def _state(node: Node, group_id: str = "g") -> tuple[object, ...]:
    group = node.mgr.share.group(group_id)
    assert group is not None
    return (
        {t: sorted(i.partitions) for t, i in group.initialized.items()},
        {t: sorted(i.partitions) for t, i in group.initializing.items()},
        group.deleting,
    )


def _initialized(node: Node, member: str = "m1", group: str = "g") -> ShareGroup:
    node.join(member, "t1", "t2", group=group)
    share_group = node.mgr.share.group(group)
    assert share_group is not None and set(share_group.initialized) == {T1, T2}
    return share_group


def _written(node: Node) -> list[ShareStatePartitions]:
    return [r for r in node.log.records if isinstance(r, ShareStatePartitions)]


def test_a_deleted_topic_leaves_the_groups_state_partitions_and_a_restart_keeps_it_so(node: Node) -> None:
    _initialized(node)
    _initialized(node, group="other")
    node.mgr.apply(ShareGroupEpoch("bystander", 2))  # a share group without state partitions
    before = len(node.log.records)
    node.mgr.delete_topics(["t1"])
    # one record per group that held t1 (maybeCleanupShareGroupState), none for the bystander
    written = node.log.records[before:]
    assert [(r.group_id, type(r)) for r in written] == [
        ("g", ShareStatePartitions), ("other", ShareStatePartitions)
    ]  # fmt: skip
    assert _state(node) == ({T2: [0, 1]}, {}, ())
    assert _state(node.restart()) == _state(node)
    # the group epoch is not bumped by the cleanup itself; the next heartbeat sees the hash move
    group = node.mgr.share.group("g")
    assert group is not None and not group.initialized_since_epoch


def test_deleting_an_unheld_topic_writes_nothing(node: Node) -> None:
    _initialized(node)
    node.topics.set("t3", uuid.UUID(int=3), 1)
    before = len(node.log.records)
    node.mgr.delete_topics(["t3", "no-such-topic"])
    assert node.log.records[before:] == []


def test_offsets_deletion_moves_a_topic_to_deleting_and_out(node: Node) -> None:
    _initialized(node)
    node.hb("m1", -1)  # DeleteShareGroupOffsets needs an empty group
    node.mgr.share.start_offsets_deletion("g", {T1})
    assert _state(node) == ({T2: [0, 1]}, {}, ((T1, "t1"),))
    assert _state(node.restart()) == _state(node)
    node.mgr.share.complete_offsets_deletion("g", {T1})
    assert _state(node) == ({T2: [0, 1]}, {}, ())
    assert _state(node.restart()) == _state(node)
    # a topic without state metadata is not eligible: nothing written
    before = len(node.log.records)
    node.mgr.share.start_offsets_deletion("g", {T1})
    node.mgr.share.complete_offsets_deletion("g", {T1})
    assert node.log.records[before:] == []


def test_a_topic_deleted_while_deleting_leaves_deleting(node: Node) -> None:
    _initialized(node)
    node.hb("m1", -1)
    node.mgr.share.start_offsets_deletion("g", {T1, T2})
    assert _state(node)[2] == ((T1, "t1"), (T2, "t2"))
    node.mgr.delete_topics(["t2"])
    assert _state(node) == ({}, {}, ((T1, "t1"),))
    assert _state(node.restart()) == _state(node)


def test_a_rejoin_after_offsets_deletion_initializes_the_topic_again(node: Node) -> None:
    _initialized(node)
    node.hb("m1", -1)
    node.mgr.share.start_offsets_deletion("g", {T1})
    node.mgr.share.complete_offsets_deletion("g", {T1})
    joined = node.join("m2", "t1")
    assert (joined.error, joined.assignment) == (ErrorCode.NONE, {T1: frozenset(range(4))})


def test_delete_groups_writes_every_topic_deleting_before_the_tombstones(node: Node) -> None:
    _initialized(node)
    node.hb("m1", -1)
    before = len(node.log.records)
    answers: list[list[tuple[str, ErrorCode]]] = []
    node.mgr.delete_groups(["g"], answers.append)
    assert answers == [[("g", ErrorCode.NONE)]]
    deleting, *tombstones = node.log.records[before:]
    assert isinstance(deleting, ShareStatePartitions)
    everything = ((T1, "t1"), (T2, "t2"))
    assert (deleting.initialized, deleting.initializing, deleting.deleting) == ((), (), everything)
    assert tombstones[-1] == ShareStatePartitions("g", None)
    assert node.restart().mgr.share.group("g") is None


def test_a_failed_delete_groups_write_puts_the_state_partitions_back(node: Node) -> None:
    _initialized(node)
    node.hb("m1", -1)
    before = _state(node)
    node.log.fail_with = OSError("disk")
    answers: list[list[tuple[str, ErrorCode]]] = []
    node.mgr.delete_groups(["g"], answers.append)
    assert answers[0][0][1] is not ErrorCode.NONE
    assert _state(node) == before


def test_a_topic_initializing_again_leaves_deleting(node: Node) -> None:
    """addInitializingTopicsRecords: an offsets deletion left unfinished (deleting, say after a stop),
    then a member subscribes to the topic: it is initializing again and no longer deleting."""
    _initialized(node)
    node.hb("m1", -1)
    node.mgr.share.start_offsets_deletion("g", {T1})
    assert _state(node)[2] == ((T1, "t1"),)
    node.hb("m2", 0, ("t1",))
    state = _state(node)
    assert T1 in state[0] and state[2] == ()  # type: ignore[operator]
    assert _state(node.restart()) == state
