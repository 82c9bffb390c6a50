"""A deleted topic's share state goes with it (issue 34; Kafka's ShareCoordinatorService.onTopicsDeleted ->
ShareCoordinatorShard.maybeCleanupShareState): DeleteTopics reaches the group side
(`GroupManager.delete_topics`), which tells the data side through the seam (`ShareMemberListener.
topics_deleted`, the node's `ShareEdge`), and the share-partition tenant tombstones the state of every
share partition of the topic, of every group; a replay of the written records (the restart's path,
through the storage codec, compacted as the log keeps it) holds none of it, while other topics' state
stays."""

from __future__ import annotations

from uuid import UUID

from kcoord.broker.share.edge import ShareEdge
from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.share_partitions import AcknowledgeType, SharePartitions, ShareTombstone
from kcoord.protocol.errors import ErrorCode
from tests.unit.fakes import MemoryRecordLog
from tests.unit.share_groups.conftest import T1, T2, Node
from tests.unit.share_partitions.conftest import SETTINGS, bounds

ACCEPT = int(AcknowledgeType.ACCEPT)


def _tenant() -> SharePartitions:
    clock = FakeClock()
    tenant = SharePartitions(MemoryRecordLog(), clock, FakeTimers(clock))  # type: ignore[arg-type]
    tenant.on_loaded()
    return tenant


def _consumed(tenant: SharePartitions, group: str, topic: UUID, partition: int, last: int) -> None:
    """Offsets 0..last acquired by a member and 0..1 accepted: durable state with a start offset of 2."""
    assert tenant.next_fetch_offset(group, topic, partition, SETTINGS, bounds()) == 0
    acquired = tenant.acquire(group, "m", topic, partition, SETTINGS, [(0, last)], 500, 500, False)
    assert [(r.first_offset, r.last_offset) for r in acquired] == [(0, last)]
    answers: list[ErrorCode] = []
    tenant.acknowledge(group, "m", topic, partition, [(0, 1, [ACCEPT])], SETTINGS, answers.append)
    assert answers == [ErrorCode.NONE]


def _replayed(records: list[object]) -> SharePartitions:
    """A restart's tenant: the newest record of each key (the log is compacted by key), decoded."""
    newest: dict[tuple[int, bytes], tuple[int, object]] = {}
    for position, record in enumerate(records):
        stored = to_storage(record)  # type: ignore[arg-type]
        newest[(stored.type, stored.key)] = (position, record)
    tenant = _tenant()
    for _, record in sorted(newest.values(), key=lambda pair: pair[0]):
        tenant.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
    return tenant


def test_deleting_a_topic_deletes_its_share_state_in_every_group_durably() -> None:
    node = Node().load()
    tenant = _tenant()
    node.mgr.share.listener = ShareEdge(tenant)  # the seam as the wiring plugs it (wiring/app_state.py)
    for group in ("g", "h"):
        _consumed(tenant, group, T1, 0, 5)
        _consumed(tenant, group, T1, 3, 5)
        _consumed(tenant, group, T2, 0, 5)
    assert tenant.start_offset("g", T1, 0) == 2

    node.mgr.delete_topics(["t1"])

    for group in ("g", "h"):
        assert tenant.partitions(group) == [(T2, 0)]
        assert tenant.describe(group, T1, 0) is None and tenant.durable(group, T1, 3) is None
        assert tenant.start_offset(group, T2, 0) == 2
    written = tenant.runtime.log.records  # type: ignore[attr-defined]
    tombstoned = {(r.group_id, r.partition) for r in written if isinstance(r, ShareTombstone)}
    assert tombstoned == {("g", 0), ("g", 3), ("h", 0), ("h", 3)}
    restarted = _replayed(list(written))
    for group in ("g", "h"):
        assert restarted.partitions(group) == [(T2, 0)]
        assert restarted.start_offset(group, T2, 0) == 2
    # a topic created again under the name has another id: its share partitions start fresh
    assert restarted.next_fetch_offset("g", UUID(int=0x77), 0, SETTINGS, bounds()) == 0


def test_a_topic_without_share_state_writes_nothing() -> None:
    node = Node().load()
    tenant = _tenant()
    node.mgr.share.listener = ShareEdge(tenant)
    _consumed(tenant, "g", T2, 0, 3)
    before = len(tenant.runtime.log.records)  # type: ignore[attr-defined]
    node.mgr.delete_topics(["t1", "no-such-topic"])
    assert len(tenant.runtime.log.records) == before  # type: ignore[attr-defined]
    assert tenant.partitions("g") == [(T2, 0)]
