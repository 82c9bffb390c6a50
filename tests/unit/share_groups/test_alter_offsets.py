"""AlterShareGroupOffsets' group-side write, as Kafka 4.3.1's GroupMetadataManager.alterShareGroupOffsets
does it (read from the jar's bytecode, answers seen on the oracle): an id nobody holds becomes an empty
share group (getOrMaybeCreateShareGroup(id, true); group and assignment epoch 1), the altered partitions
are written initializing (addInitializingTopicsRecords) and then initialized without a group epoch bump
(initializeShareGroupState writes the state record alone), so a member joining later gets them at once
with the epoch bump its heartbeat makes. A restart replays the same group."""

from __future__ import annotations

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.model import TopicPartitionsInfo
from kcoord.coordinator.groups.share.records import ShareGroupEpoch, ShareStatePartitions
from tests.unit.share_groups.conftest import T1, T2, Node


def _alter(node: Node, group: str, *parts: tuple[str, int]) -> list[ErrorCode | None]:
    ids = {"t1": T1, "t2": T2}
    altered: dict[object, set[int]] = {}
    for name, partition in parts:
        altered.setdefault(name, set()).add(partition)
    infos = {ids[n]: TopicPartitionsInfo(ids[n], n, frozenset(p)) for n, p in altered.items()}
    answers: list[ErrorCode | None] = []
    node.mgr.share.alter_offsets(group, infos, answers.append)  # type: ignore[arg-type]
    return answers


def _shape(node: Node, group: str) -> tuple[object, ...]:
    share_group = node.mgr.share.group(group)
    assert share_group is not None
    return (
        share_group.state.value,
        share_group.group_epoch,
        share_group.assignment_epoch,
        {t: sorted(i.partitions) for t, i in share_group.initialized.items()},
        dict(share_group.initializing),
    )


def test_an_unknown_id_becomes_an_empty_share_group_with_its_partitions_initialized(node: Node) -> None:
    before = len(node.log.records)
    assert _alter(node, "new", ("t1", 0), ("t1", 2)) == [None]
    written = node.log.records[before:]
    assert [type(r) for r in written] == [ShareStatePartitions, ShareStatePartitions]  # no epoch record
    assert not any(isinstance(r, ShareGroupEpoch) for r in written)
    assert _shape(node, "new") == ("Empty", 1, 1, {T1: [0, 2]}, {})
    assert node.mgr.share.initialized_partitions("new") == [(T1, 0), (T1, 2)]
    described = node.mgr.share.describe(["new"])[0]
    assert (described.error, described.state, described.group_epoch, described.assignment_epoch) == (
        ErrorCode.NONE, "Empty", 1, 1
    )  # fmt: skip
    assert _shape(node.restart(), "new") == _shape(node, "new")

    # a second alteration adds its partitions, still without an epoch bump
    assert _alter(node, "new", ("t2", 1)) == [None]
    assert _shape(node, "new") == ("Empty", 1, 1, {T1: [0, 2], T2: [1]}, {})


def test_a_member_joining_a_group_made_by_altering_offsets_is_assigned_at_once(node: Node) -> None:
    assert _alter(node, "new", ("t2", 0), ("t2", 1)) == [None]
    first = node.hb("m1", 0, ("t2",), group="new")
    assert first.error is ErrorCode.NONE and first.member_epoch == 2  # the heartbeat's own bump
    assert first.assignment is not None and sorted(first.assignment.get(T2, ())) == [0, 1]


def test_nothing_altered_writes_nothing_and_creates_no_group(node: Node) -> None:
    before = len(node.log.records)
    assert _alter(node, "none") == [None]
    assert node.log.records[before:] == [] and node.mgr.share.group("none") is None
