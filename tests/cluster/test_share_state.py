"""Share-partition state in PostgreSQL, following the partition's leader (issue 34 item 3, the cluster
half): two "nodes" in one process, each its own pool, partition leases, `ShareStateLog`, `ShareHosting`
and share tenant, on a real database. A new leader loads what the old one acknowledged (nothing
acknowledged delivered again, delivery counts kept, nothing lost), the old leader's writes after the
takeover are refused by the lease fence (NOT_LEADER_OR_FOLLOWER) and change nothing, a partition not
hosted answers NOT_LEADER_OR_FOLLOWER, and snapshots bound the rows a leader loads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.shard_log import _GROUP_KEYED, shard_key
from kcoord.cluster.share_state import ShareHosting, ShareStateLog
from kcoord.coordinator.groups.share.records import SHARE_RECORD_CLASSES, ShareGroupEpoch
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.share_partitions import AcknowledgeType, LogBounds, SharePartitions, ShareSettings
from kcoord.protocol.errors import ErrorCode
from tests.cluster.helpers import init

TOPIC, GROUP = "tickets", "workers"
TOPIC_ID = uuid.uuid4()
SETTINGS = ShareSettings(30_000, 5, 2000, "earliest", 0)
BOUNDS = LogBounds(0, 100, 100, lambda _ms: None)
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)


class Node:
    """One node's share side over its own pool: leases, the state log, the hosting, the tenant."""

    def __init__(self, pool: Any, node_id: int, snapshot_every: int = 500) -> None:
        self.leases = PartitionLeases(pool, node_id, 60_000)
        self.log = ShareStateLog(pool, lambda topic_id: TOPIC if topic_id == TOPIC_ID else None)
        clock = FakeClock()
        self.tenant = SharePartitions(
            self.log, clock, FakeTimers(clock), hosted_only=True, snapshot_every=snapshot_every
        )
        self.tenant.on_loaded()
        self.led: dict[tuple[str, int], int] = {}
        self.hosting = ShareHosting(self.log, self.tenant, lambda: dict(self.led), self._topic_id)

    @staticmethod
    def _topic_id(topic: str) -> uuid.UUID | None:
        return TOPIC_ID if topic == TOPIC else None

    async def lead(self, partition: int = 0) -> None:
        epoch = await self.leases.acquire((TOPIC, partition))
        assert epoch is not None
        self.led[(TOPIC, partition)] = epoch
        await self.hosting.reconcile()

    def acquire(self, member: str, first: int, last: int, partition: int = 0) -> list[tuple[int, int, int]]:
        offset = self.tenant.next_fetch_offset(GROUP, TOPIC_ID, partition, SETTINGS, BOUNDS)
        if offset is None:
            return []
        ranges = self.tenant.acquire(
            GROUP, member, TOPIC_ID, partition, SETTINGS, [(first, last)], 500, 500, strict=True
        )
        return [(r.first_offset, r.last_offset, r.delivery_count) for r in ranges]

    async def ack(self, member: str, first: int, last: int, kind: int, partition: int = 0) -> ErrorCode:
        answered: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.tenant.acknowledge(
            GROUP, member, TOPIC_ID, partition, [(first, last, [kind])], SETTINGS, answered.set_result
        )
        return await asyncio.wait_for(answered, 10)


@pytest.fixture
async def pools(cluster_dsn: str) -> AsyncIterator[list[Any]]:
    await init(cluster_dsn, 4)
    made = [await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4) for _ in range(2)]
    try:
        yield made
    finally:
        for pool in made:
            await pool.close()


async def _expire(pool: Any, partition: int = 0) -> None:
    """The leader's lease runs out (as after kill -9, without waiting for the TTL)."""
    await pool.execute(
        "UPDATE kcoord_partition_lease SET expires_at = now() - interval '1 second' "
        "WHERE topic = $1 AND partition = $2",
        TOPIC,
        partition,
    )


async def test_a_new_leader_resumes_the_share_state_and_fences_the_old_one(pools: list[Any]) -> None:
    old, new = Node(pools[0], 1), Node(pools[1], 2)
    await old.lead()
    assert old.acquire("m1", 0, 9) == [(0, 9, 1)]
    assert await old.ack("m1", 0, 3, ACCEPT) is ErrorCode.NONE  # acknowledged: never again
    assert await old.ack("m1", 4, 5, RELEASE) is ErrorCode.NONE  # released: delivery count 1 kept
    # 6-9 stay acquired in the old leader's memory only (Kafka's acquire persists nothing)

    await _expire(pools[0])
    await new.lead()
    state = new.tenant.describe(GROUP, TOPIC_ID, 0)
    assert state is not None and state.start_offset == 4
    assert new.acquire("m2", 0, 19) == [(4, 5, 2), (6, 19, 1)]  # nothing acknowledged, counts kept

    # The old leader still thinks it leads: its write is refused by the fence and changes nothing.
    assert await old.ack("m1", 6, 9, ACCEPT) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert await new.ack("m2", 4, 19, ACCEPT) is ErrorCode.NONE
    await old.hosting.reconcile()  # the old leader's hosting sees the failed write: dropped, not served
    old.led.clear()
    await old.hosting.reconcile()
    assert not old.tenant.hosts(TOPIC_ID, 0)

    third = Node(pools[0], 3)
    await _expire(pools[1])
    await third.lead()
    resumed = third.tenant.describe(GROUP, TOPIC_ID, 0)
    assert resumed is not None and resumed.start_offset == 20  # 0-19 all acknowledged, none lost


async def test_a_partition_not_led_here_is_not_served(pools: list[Any]) -> None:
    node = Node(pools[0], 1)
    assert node.tenant.next_fetch_offset(GROUP, TOPIC_ID, 0, SETTINGS, BOUNDS) is None
    assert await node.ack("m1", 0, 0, ACCEPT) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    await node.lead(1)
    assert node.acquire("m1", 0, 0, partition=1) == [(0, 0, 1)]
    assert node.tenant.next_fetch_offset(GROUP, TOPIC_ID, 0, SETTINGS, BOUNDS) is None


async def test_snapshots_bound_the_rows_a_new_leader_loads(pools: list[Any]) -> None:
    old = Node(pools[0], 1, snapshot_every=3)
    await old.lead()
    for offset in range(10):
        assert old.acquire("m1", offset, offset) == [(offset, offset, 1)]
        assert await old.ack("m1", offset, offset, ACCEPT) is ErrorCode.NONE
    rows = await pools[0].fetch("SELECT kind FROM kcoord_share_state WHERE topic = $1", TOPIC)
    assert sorted(r["kind"] for r in rows) == [0x50, 0x51]  # one snapshot, one cumulative update
    await _expire(pools[0])
    new = Node(pools[1], 2)
    await new.lead()
    state = new.tenant.describe(GROUP, TOPIC_ID, 0)
    assert state is not None and state.start_offset == 10


async def test_a_reset_by_the_groups_coordinator_fences_the_leader_which_reloads_it(pools: list[Any]) -> None:
    """AlterShareGroupOffsets on the group's coordinator for a partition another node leads: a snapshot at
    a higher state epoch (Kafka's InitializeShareGroupState); the leader's write from the state before
    is refused by the state epoch (FENCED_STATE_EPOCH -> NOT_LEADER_OR_FOLLOWER), and it reloads."""
    leader, coordinator = Node(pools[0], 1), Node(pools[1], 2)
    await leader.lead()
    assert leader.acquire("m1", 0, 9) == [(0, 9, 1)]
    assert await leader.ack("m1", 0, 3, ACCEPT) is ErrorCode.NONE

    coordinator.tenant.observe(GROUP, await coordinator.log.load(TOPIC, 0, TOPIC_ID))
    observed = coordinator.tenant.describe(GROUP, TOPIC_ID, 0)
    assert observed is not None and observed.start_offset == 4
    assert coordinator.tenant.partitions(GROUP) == [(TOPIC_ID, 0)]
    answered: asyncio.Future[dict[Any, ErrorCode]] = asyncio.get_running_loop().create_future()
    coordinator.tenant.reset(GROUP, {(TOPIC_ID, 0): 50}, answered.set_result)
    assert await asyncio.wait_for(answered, 10) == {(TOPIC_ID, 0): ErrorCode.NONE}

    assert await leader.ack("m1", 4, 9, ACCEPT) is ErrorCode.NOT_LEADER_OR_FOLLOWER  # the old state epoch
    await leader.hosting.reconcile()  # the refused write marked the partition: dropped and loaded again
    reloaded = leader.tenant.describe(GROUP, TOPIC_ID, 0)
    assert reloaded is not None and reloaded.start_offset == 50 and reloaded.state_epoch == 1
    assert leader.acquire("m1", 50, 52) == [(50, 52, 1)]
    assert await leader.ack("m1", 50, 52, ACCEPT) is ErrorCode.NONE  # the new state epoch is accepted

    deleted: asyncio.Future[dict[Any, ErrorCode]] = asyncio.get_running_loop().create_future()
    coordinator.tenant.observe(GROUP, await coordinator.log.load(TOPIC, 0, TOPIC_ID))
    coordinator.tenant.delete(GROUP, None, deleted.set_result)
    assert await asyncio.wait_for(deleted, 10) == {(TOPIC_ID, 0): ErrorCode.NONE}
    assert await pools[0].fetchval("SELECT count(*) FROM kcoord_share_state") == 0


def test_a_share_groups_records_belong_to_its_shard() -> None:
    """Issue 34 item 1: a share group's records (Kafka's `__consumer_offsets` keys 10-15) are written to
    its group's shard, as a consumer group's, so the shard's next owner loads the group."""
    assert shard_key(ShareGroupEpoch("workers", 3)) == "workers"
    assert all(cls in _GROUP_KEYED for cls in SHARE_RECORD_CLASSES)
