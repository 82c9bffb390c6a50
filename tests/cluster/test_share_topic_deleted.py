"""A deleted topic's share state in cluster mode (issue 34; Kafka's ShareCoordinatorService.onTopicsDeleted),
on a real PostgreSQL: the topic's deletion (`ClusterPartitions.delete_topic`'s statements, one
transaction) removes its `kcoord_share_state` rows with its batches, so a topic created again under the
name (another topic id) starts its share partitions fresh: its leader's writes at state epoch 0 are not
fenced by the old share partitions' higher state epochs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord.cluster.leases import PartitionLeases
from kcoord.cluster.partitions import _DELETE_TOPIC
from kcoord.cluster.share_state import ShareHosting, ShareStateLog
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from kcoord.coordinator.share_partitions import AcknowledgeType, LogBounds, SharePartitions, ShareSettings
from kcoord.protocol.errors import ErrorCode
from tests.cluster.helpers import init

TOPIC, GROUP = "recreated", "workers"
SETTINGS = ShareSettings(30_000, 5, 2000, "earliest", 0)
BOUNDS = LogBounds(0, 100, 100, lambda _ms: None)
ACCEPT = int(AcknowledgeType.ACCEPT)


class Leader:
    """One node's share side for TOPIC (whose id is `topic_id`): lease, state log, hosting, tenant."""

    def __init__(self, pool: Any, node_id: int, topic_id: uuid.UUID) -> None:
        self.topic_id = topic_id
        self.leases = PartitionLeases(pool, node_id, 60_000)
        self.log = ShareStateLog(pool, lambda tid: TOPIC if tid == topic_id else None)
        clock = FakeClock()
        self.tenant = SharePartitions(self.log, clock, FakeTimers(clock), hosted_only=True)
        self.tenant.on_loaded()
        self.led: dict[tuple[str, int], int] = {}
        self.hosting = ShareHosting(
            self.log, self.tenant, lambda: dict(self.led), lambda t: topic_id if t == TOPIC else None
        )

    async def lead(self) -> None:
        epoch = await self.leases.acquire((TOPIC, 0))
        assert epoch is not None
        self.led[(TOPIC, 0)] = epoch
        await self.hosting.reconcile()

    def acquire(self, first: int, last: int) -> list[tuple[int, int, int]]:
        assert self.tenant.next_fetch_offset(GROUP, self.topic_id, 0, SETTINGS, BOUNDS) is not None
        got = self.tenant.acquire(GROUP, "m", self.topic_id, 0, SETTINGS, [(first, last)], 500, 500, True)
        return [(r.first_offset, r.last_offset, r.delivery_count) for r in got]

    async def ack(self, first: int, last: int) -> ErrorCode:
        answered: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.tenant.acknowledge(
            GROUP, "m", self.topic_id, 0, [(first, last, [ACCEPT])], SETTINGS, answered.set_result
        )
        return await asyncio.wait_for(answered, 10)

    async def reset(self, offset: int) -> None:
        answered: asyncio.Future[dict[Any, ErrorCode]] = asyncio.get_running_loop().create_future()
        self.tenant.reset(GROUP, {(self.topic_id, 0): offset}, answered.set_result)
        assert await asyncio.wait_for(answered, 10) == {(self.topic_id, 0): ErrorCode.NONE}


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    await init(cluster_dsn, 4)
    made = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        yield made
    finally:
        await made.close()


async def _delete_topic(pool: Any) -> None:
    """What ClusterPartitions.delete_topic runs against the database for a deleted topic."""
    async with pool.acquire() as conn, conn.transaction():
        for sql in _DELETE_TOPIC:
            await conn.execute(sql, TOPIC)


async def test_a_deleted_topics_share_state_goes_and_the_topic_created_again_starts_fresh(pool: Any) -> None:
    old = Leader(pool, 1, uuid.uuid4())
    await old.lead()
    await old.reset(0)
    await old.reset(0)  # state epoch 1 now: a fresh share partition's writes (epoch 0) are older
    assert old.acquire(0, 9) == [(0, 9, 1)]
    assert await old.ack(0, 3) is ErrorCode.NONE
    assert await pool.fetchval("SELECT max(state_epoch) FROM kcoord_share_state WHERE topic = $1", TOPIC) == 1

    await _delete_topic(pool)
    assert await pool.fetchval("SELECT count(*) FROM kcoord_share_state WHERE topic = $1", TOPIC) == 0

    new = Leader(pool, 2, uuid.uuid4())  # the topic created again under the name: another id
    await new.lead()
    assert new.tenant.describe(GROUP, new.topic_id, 0) is None
    assert new.acquire(0, 9) == [(0, 9, 1)]  # from the start again (auto offset reset: earliest)
    assert await new.ack(0, 9) is ErrorCode.NONE  # not fenced by the old state epoch
    rows = await pool.fetch("SELECT topic_id, state_epoch FROM kcoord_share_state WHERE topic = $1", TOPIC)
    assert {(r["topic_id"], r["state_epoch"]) for r in rows} == {(new.topic_id, 0)}
