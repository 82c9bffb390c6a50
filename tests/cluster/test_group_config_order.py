"""Group configs end the same on every node when two nodes write one group's at once (kcoord/cluster/
metadata.py `_reapply_newer`): the writer applies its own record once answered (the runtime's write path),
after its follower may already have applied another node's newer row of the group; that row wins again,
so the writer ends with the row of the highest seq, as the others do. Two `MetadataLog`s on a real
PostgreSQL, the interleaving pinned: node B writes and node A follows it while A waits for the nodes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from kcoord import storage
from kcoord.cluster.metadata import MetadataLog
from kcoord.cluster.schema import migrate
from kcoord.coordinator.groups.group_config_api import apply_group_config
from kcoord.coordinator.groups.group_configs import GroupConfigRecord
from kcoord.coordinator.persistence.group_config_codec import group_config_from_storage

LIMIT = "share.delivery.count.limit"


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    pool = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    async with pool.acquire() as conn:
        await migrate(conn)
    try:
        yield pool
    finally:
        await pool.close()


async def _written(log: MetadataLog, record: GroupConfigRecord) -> None:
    done = asyncio.get_running_loop().create_future()
    log.append([record], done.set_result)
    assert await done is None


async def _a_writes_while_b_writes(
    pool: Any, mine: GroupConfigRecord, theirs: GroupConfigRecord
) -> dict[str, Any]:
    """Node A writes `mine`; while A waits for the nodes, node B writes `theirs` and A follows it;
    then A's runtime applies `mine` (on_done). A's configs once the loop has run the callbacks."""
    configs: dict[str, dict[str, str]] = {}

    def follow(record: storage.Record) -> None:  # node A's follower: the Replayer into its manager
        apply_group_config(configs, group_config_from_storage(record))

    node_b = MetadataLog(pool)
    followed: list[int] = []

    async def settle(seq: int) -> None:
        await _written(node_b, theirs)
        # one row per key: B's replaced A's, and A follows B's (a failed assert here would only be logged
        # by the writer, so the count is checked after the answer too)
        followed.append(await node_a.catch_up(follow))

    node_a = MetadataLog(pool, settle)
    answered = asyncio.get_running_loop().create_future()

    def on_done(error: BaseException | None) -> None:  # the runtime's write path: apply, then answer
        assert error is None
        apply_group_config(configs, mine)
        answered.set_result(dict(configs))

    node_a.append([mine], on_done)
    assert (await answered).get("g") == (dict(mine.configs) or None)  # the writer's own apply, stale
    for _ in range(10):  # loop turns (no time): the callback `_reapply_newer` scheduled
        await asyncio.sleep(0)
    assert followed == [1]
    return configs


async def test_another_nodes_newer_alter_wins_over_the_writers_late_apply(pool: Any) -> None:
    mine = GroupConfigRecord("g", ((LIMIT, "3"),))
    theirs = GroupConfigRecord("g", ((LIMIT, "4"),))
    assert await _a_writes_while_b_writes(pool, mine, theirs) == {"g": {LIMIT: "4"}}


async def test_another_nodes_deletion_wins_over_the_writers_late_apply(pool: Any) -> None:
    """B's tombstone (DeleteGroups through B's node: the group's configs go with it) after A's alter."""
    mine = GroupConfigRecord("g", ((LIMIT, "3"),))
    assert await _a_writes_while_b_writes(pool, mine, GroupConfigRecord("g", ())) == {}


async def test_the_writers_own_row_stays_when_nothing_newer_was_followed(pool: Any) -> None:
    configs: dict[str, dict[str, str]] = {}
    node_a = MetadataLog(pool)
    await node_a.catch_up(lambda r: apply_group_config(configs, group_config_from_storage(r)))
    other = GroupConfigRecord("h", ((LIMIT, "4"),))
    await _written(MetadataLog(pool), other)
    await node_a.catch_up(lambda r: apply_group_config(configs, group_config_from_storage(r)))
    mine = GroupConfigRecord("h", ((LIMIT, "5"),))
    done = asyncio.get_running_loop().create_future()
    node_a.append([mine], lambda e: (apply_group_config(configs, mine), done.set_result(e)))
    assert await done is None
    for _ in range(10):
        await asyncio.sleep(0)
    assert configs == {"h": {LIMIT: "5"}}  # B's row is older than A's: A's stands


async def test_a_writers_apply_later_than_the_answer_is_undone_at_the_next_poll(pool: Any) -> None:
    """A DeleteGroups is applied once its shard's write settled too, which may come after the metadata
    write's answer and its callback: the next catch_up (a poll, nothing new to read) applies the newer
    row followed meanwhile again."""
    configs: dict[str, dict[str, str]] = {}

    def follow(record: storage.Record) -> None:
        apply_group_config(configs, group_config_from_storage(record))

    node_b = MetadataLog(pool)
    theirs = GroupConfigRecord("g", ((LIMIT, "4"),))

    async def settle(seq: int) -> None:
        await _written(node_b, theirs)
        await node_a.catch_up(follow)

    node_a = MetadataLog(pool, settle)
    tombstone = GroupConfigRecord("g", ())
    answered = asyncio.get_running_loop().create_future()
    node_a.append([tombstone], answered.set_result)  # the metadata part settled; the shard's not yet
    assert await answered is None
    for _ in range(10):
        await asyncio.sleep(0)
    assert configs == {"g": {LIMIT: "4"}}
    apply_group_config(configs, tombstone)  # the runtime's apply, once the shard's part settled
    assert configs == {}
    assert await node_a.catch_up(follow) == 0  # the next poll
    assert configs == {"g": {LIMIT: "4"}}
