"""Cluster mode's delete race (issue 34 item 5), on a real PostgreSQL: the group's coordinator deletes the
state of a share partition another node leads (DeleteShareGroupOffsets / DeleteGroups:
`kcoord_share_set`, Kafka's DeleteShareGroupState), and the leader, before it reloads, writes from the
state it still holds (a lock expiry, an acknowledgement). That write is refused by the delete's marker
(NOT_LEADER_OR_FOLLOWER, as Kafka's share coordinator refuses a write for a share partition it no longer
knows) and the deleted state stays deleted; once reloaded, the leader serves the share partition from
nothing and its writes are taken."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord.protocol.errors import ErrorCode
from tests.cluster.helpers import init
from tests.cluster.test_share_state import ACCEPT, GROUP, TOPIC, TOPIC_ID, Node


@pytest.fixture
async def pools(cluster_dsn: str) -> AsyncIterator[list[Any]]:
    await init(cluster_dsn, 4)
    made = [await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4) for _ in range(2)]
    try:
        yield made
    finally:
        for pool in made:
            await pool.close()


async def _rows(pool: Any) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM kcoord_share_state WHERE topic = $1", TOPIC))


async def _delete_elsewhere(coordinator: Node) -> None:
    """The group's coordinator deletes the group's state of the partition it does not lead."""
    coordinator.tenant.observe(GROUP, await coordinator.log.load(TOPIC, 0, TOPIC_ID))
    deleted: asyncio.Future[dict[Any, ErrorCode]] = asyncio.get_running_loop().create_future()
    coordinator.tenant.delete(GROUP, None, deleted.set_result)
    assert await asyncio.wait_for(deleted, 10) == {(TOPIC_ID, 0): ErrorCode.NONE}


async def test_a_leaders_write_from_before_a_delete_is_refused_and_the_state_stays_deleted(
    pools: list[Any],
) -> None:
    leader, coordinator = Node(pools[0], 1), Node(pools[1], 2)
    await leader.lead()
    assert leader.acquire("m1", 0, 9) == [(0, 9, 1)]
    assert await leader.ack("m1", 0, 3, ACCEPT) is ErrorCode.NONE
    assert await _rows(pools[0]) > 0

    await _delete_elsewhere(coordinator)
    assert await _rows(pools[0]) == 0

    # The leader has not reloaded yet (its reconcile did not run): it still holds 4-9 acquired, and
    # writes from that state. Before the marker, this write was stored and the deleted state came back.
    assert await leader.ack("m1", 4, 9, ACCEPT) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert await _rows(pools[0]) == 0

    await leader.hosting.reconcile()  # the refused write marked the partition: dropped and loaded again
    assert leader.tenant.hosts(TOPIC_ID, 0)
    assert leader.tenant.describe(GROUP, TOPIC_ID, 0) is None  # nothing left of the deleted state
    assert leader.acquire("m2", 0, 4) == [(0, 4, 1)]  # fresh: earliest, delivery counts from 1
    assert await leader.ack("m2", 0, 4, ACCEPT) is ErrorCode.NONE  # the reloaded leader's writes count
    assert await _rows(pools[0]) > 0

    # A second delete counts the marker up: the leader's next older write is refused again.
    await _delete_elsewhere(coordinator)
    assert leader.acquire("m2", 5, 6) == [(5, 6, 1)]
    assert await leader.ack("m2", 5, 6, ACCEPT) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert await _rows(pools[0]) == 0
