"""Ownership moves the coordinators' own shard phases (coordinator/runtime/phases.py) on a real
PostgreSQL: a shard replays while LOADING, serves once ACTIVE, and answers NOT_COORDINATOR again once
released; the edge's `state(shard)` reads the same table."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from kcoord import storage
from kcoord.cluster.leases import ShardLeases
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.ownership import Ownership
from kcoord.cluster.schema import init_cluster
from kcoord.coordinator.runtime import Phase, ShardPhases
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode
from tests.unit.conftest import Harness

SHARDS = 4
KEYS = {shard_of(k, SHARDS): k for k in ("a", "b", "c", "d")}  # one group id per shard


@pytest.fixture
async def pool(cluster_dsn: str) -> AsyncIterator[Any]:
    conn = await asyncpg.connect(cluster_dsn)
    await init_cluster(conn, SHARDS)
    await conn.close()
    made = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        yield made
    finally:
        await made.close()


class _Host:
    """`ShardHost` noting each shard's phase while its records replay."""

    def __init__(self, phases: ShardPhases) -> None:
        self.phases = phases
        self.loading: dict[int, Phase] = {}
        self.unloaded: list[int] = []

    def replay(self, shard: int) -> Callable[[storage.Record], None]:
        return lambda record: None

    def loaded(self, shard: int) -> None:
        self.loading[shard] = self.phases.of(shard)

    def unload(self, shard: int) -> None:
        self.unloaded.append(shard)


async def _nothing() -> None:
    return None


def _commit_error(groups: Harness, group: str) -> int:
    reply = groups.commit({("t", 0): 1}, group=group)
    [partition] = reply["topics"][0]["partitions"]
    return int(partition["error_code"])


async def test_ownership_moves_the_phases_the_coordinators_answer_from(pool: Any) -> None:
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    groups = Harness(phases=phases)  # on_loaded: the node active, no shard yet
    host = _Host(phases)
    ownership = Ownership(pool, ShardLeases(pool, 1, 10_000), phases, host, _nothing)
    assert {_commit_error(groups, k) for k in KEYS.values()} == {ErrorCode.NOT_COORDINATOR}
    assert ownership.state(0) is Phase.NOT_OWNED is Phase.NOT_OWNED

    await ownership.reconcile(ClusterView())  # the only node: it prefers every shard
    assert host.loading == dict.fromkeys(range(SHARDS), Phase.LOADING), "replayed while LOADING"
    assert ownership.owned() == dict.fromkeys(range(SHARDS), Phase.ACTIVE)
    assert all(ownership.state(s) is Phase.ACTIVE for s in range(SHARDS))
    assert {_commit_error(groups, k) for k in KEYS.values()} == {ErrorCode.NONE}

    await ownership.release_all()
    assert sorted(host.unloaded) == list(range(SHARDS)) and ownership.owned() == {}
    assert {_commit_error(groups, k) for k in KEYS.values()} == {ErrorCode.NOT_COORDINATOR}
    groups.mgr.shutdown()
    assert {_commit_error(groups, k) for k in KEYS.values()} == {ErrorCode.COORDINATOR_NOT_AVAILABLE}


async def test_the_self_fence_marks_the_shard_draining_before_the_next_answer(pool: Any) -> None:
    """A request naming several groups is answered from the phases (kcoord/cluster/per_group.py): once
    `state` finds a shard's lease clock run out, the coordinators refuse its groups at once, not after
    the unload task runs."""
    now = [100.0]
    phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
    groups = Harness(phases=phases)
    ownership = Ownership(
        pool, ShardLeases(pool, 1, 10_000, monotonic=lambda: now[0]), phases, _Host(phases), _nothing
    )
    await ownership.reconcile(ClusterView())
    assert [d.error for d in groups.mgr.describe_groups(list(KEYS.values()))] == [
        ErrorCode.GROUP_ID_NOT_FOUND
    ] * 4
    now[0] += 10.0  # past TTL - margin without a renewal
    assert ownership.state(0) is Phase.DRAINING
    assert phases.of(0) is Phase.DRAINING and ownership.log(0) is None  # no await in between
    errors = {d.group_id: d.error for d in groups.mgr.describe_groups(list(KEYS.values()))}
    assert errors[KEYS[0]] is ErrorCode.NOT_COORDINATOR
    assert {errors[KEYS[s]] for s in (1, 2, 3)} == {ErrorCode.GROUP_ID_NOT_FOUND}
    now[0] -= 10.0
    await ownership.release_all()
    assert phases.of(0) is Phase.NOT_OWNED
