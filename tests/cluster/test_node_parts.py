"""The parts of a cluster node: rendezvous placement, unloading and loading groups in the manager,
the routing log, the edge's shard check, and on PostgreSQL the cluster-wide records, producer id
blocks and the startup checks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from kcoord.broker.context import RequestMeta
from kcoord.broker.middleware import handler_table
from kcoord.cluster.edge import ClusterRouting, request_keys
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.metadata import ClusterProducerIds, MetadataLog
from kcoord.cluster.ownership import preferred_owner
from kcoord.cluster.routing import NotServed, RoutingRecordLog
from kcoord.coordinator.metadata import TopicRecord, TopicRegistry, TopicTombstone
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.persistence import Replayer
from kcoord.coordinator.persistence.codec import from_storage
from kcoord.coordinator.runtime import Phase
from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.errors import ErrorCode
from tests.cluster.helpers import commit, group_in, init
from tests.kcoord_process import REPO
from tests.unit.conftest import Harness
from tests.unit.fakes import MemoryRecordLog


# -- placement ------------------------------------------------------------------------------------------
def test_rendezvous_spreads_shards_and_a_joining_node_takes_only_shards_for_itself() -> None:
    two = {s: preferred_owner(s, [1, 2]) for s in range(50)}
    three = {s: preferred_owner(s, [1, 2, 3]) for s in range(50)}
    assert all(three[s] in (two[s], 3) for s in range(50))  # nothing moves between 1 and 2
    counts = [list(three.values()).count(n) for n in (1, 2, 3)]
    assert all(8 <= c <= 26 for c in counts), counts
    assert preferred_owner(7, []) is None
    assert preferred_owner(7, [3, 1, 2]) == preferred_owner(7, [1, 2, 3])  # order does not matter


# -- unloading and loading groups ---------------------------------------------------------------------
def test_unload_forgets_a_shards_groups_and_answers_parked_joins_not_coordinator() -> None:
    h = Harness(group_initial_rebalance_delay_ms=60_000)
    moving, staying = group_in(3, 8), group_in(5, 8)
    for group in (moving, staying):
        assert h.commit({("t", 0): 7}, group=group)["topics"][0]["partitions"][0]["error_code"] == 0
    _, parked = h.join_new(group=moving)
    assert not parked.done  # the initial rebalance delay holds it
    h.mgr.unload(lambda g: shard_of(g, 8) == 3)
    assert parked.done and parked.error == ErrorCode.NOT_COORDINATOR
    assert h.mgr.group(moving) is None and h.mgr.committed_offsets(moving) == {}
    assert h.mgr.committed_offsets(staying)[("t", 0)].offset == 7
    # Loading it again (replaying what the shard holds) brings the offsets back.
    for record in h.log.records:
        if getattr(record, "group_id", None) == moving:
            h.mgr.apply(record)
    h.mgr.shard_loaded(lambda g: shard_of(g, 8) == 3)
    assert h.mgr.committed_offsets(moving)[("t", 0)].offset == 7
    assert h.mgr.group(moving) is not None


# -- the routing log -------------------------------------------------------------------------------------
class _ShardLog(MemoryRecordLog):
    failure: BaseException | None = None


async def test_routing_splits_an_append_by_shard_and_answers_once_all_settled() -> None:
    logs = {1: _ShardLog(), 2: _ShardLog()}
    metadata = MemoryRecordLog()
    failed: list[int] = []
    routing = RoutingRecordLog(8, logs.get, metadata, lambda s, _: failed.append(s))  # type: ignore[arg-type]
    g1, g2, g3 = group_in(1, 8), group_in(2, 8), group_in(4, 8)
    topic = TopicRecord("t", uuid.uuid4(), 1)
    outcomes: list[BaseException | None] = []
    routing.append([commit(g1, 0, 1), commit(g2, 0, 2), topic, commit(g1, 1, 3)], outcomes.append)
    await asyncio.sleep(0)
    assert outcomes == [None]
    assert [len(b) for b in logs[1].batches] == [2] and [len(b) for b in logs[2].batches] == [1]
    assert metadata.records == [topic]
    routing.append([commit(g1, 0, 4), commit(g3, 0, 5)], outcomes.append)  # shard 4 is not served
    await asyncio.sleep(0)
    assert isinstance(outcomes[1], NotServed) and outcomes[1].shard == 4


# -- the edge ---------------------------------------------------------------------------------------------
def test_the_edge_refuses_groups_of_shards_this_node_does_not_serve() -> None:
    assert request_keys(9, {"group_id": "a", "groups": []}) == ["a"]  # OffsetFetch v2's empty default
    assert request_keys(9, {"groups": [{"group_id": "a"}, {"group_id": "b"}]}) == ["a", "b"]
    assert request_keys(22, {"transactional_id": None}) == []  # an idempotent producer: anywhere
    states = {shard_of("loading", 50): Phase.LOADING, shard_of("active", 50): Phase.ACTIVE}
    served: list[str] = []
    plain: dict[int, Any] = {
        12: lambda ctx, req, meta, respond: served.append(req["group_id"]),
        8: lambda ctx, req, meta, respond: served.append(req["group_id"]),
    }
    routing = ClusterRouting(lambda s: states.get(s, Phase.NOT_OWNED), ClusterView, 50)
    handlers = handler_table([routing], plain)
    answers: list[dict[str, Any]] = []
    meta = RequestMeta(4, "c", "/127.0.0.1")
    for group in ("active", "loading", "elsewhere"):
        handlers[12](None, {"group_id": group}, meta, answers.append)
    assert served == ["active"]
    assert [a["error_code"] for a in answers] == [
        ErrorCode.NONE,
        ErrorCode.NOT_COORDINATOR,
    ]  # Heartbeat: NONE
    body = {"group_id": "loading", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    handlers[8](None, body, meta, answers.append)
    assert answers[-1]["topics"][0]["partitions"][0]["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


# -- on PostgreSQL ----------------------------------------------------------------------------------------
class _Registry:
    def __init__(self) -> None:
        self.log = MemoryRecordLog()
        self.topics = TopicRegistry(self.log)
        self.replayer = Replayer(Harness().mgr, self.topics, ProducerIds(self.log))  # type: ignore[arg-type]


async def test_cluster_wide_records_written_on_one_node_are_followed_by_another(cluster_dsn: str) -> None:
    await init(cluster_dsn, 8)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        writer, follower = MetadataLog(pool), MetadataLog(pool)
        seen = _Registry()
        done: list[BaseException | None] = []

        def append(records: Sequence[Any]) -> None:
            writer.append(records, done.append)

        append([TopicRecord("a", uuid.uuid4(), 3)])
        append([TopicRecord("b", uuid.uuid4(), 1)])
        append([TopicTombstone("a")])
        for _ in range(100):
            if len(done) == 3:
                break
            await asyncio.sleep(0.02)
        assert done == [None, None, None]
        assert await follower.catch_up(seen.replayer.apply) == 2  # "a" is one row: its tombstone
        assert sorted(seen.topics.names()) == ["b"]
        assert await follower.catch_up(seen.replayer.apply) == 0
        rows = await pool.fetch("SELECT type, key, value FROM kcoord_metadata ORDER BY seq")
        assert [from_storage(_record(r)) for r in rows][-1] == TopicTombstone("a")  # the newest
    finally:
        await pool.close()


def _record(row: Any) -> Any:
    from kcoord import storage

    return storage.Record(
        row["type"], bytes(row["key"]), None if row["value"] is None else bytes(row["value"])
    )


async def test_two_nodes_never_hand_out_the_same_producer_id(cluster_dsn: str) -> None:
    await init(cluster_dsn, 8)
    pool = await asyncpg.create_pool(cluster_dsn, min_size=1, max_size=4)
    try:
        nodes = [ClusterProducerIds(pool), ClusterProducerIds(pool)]
        got: list[int | None] = []
        done = asyncio.Event()

        def take(pid: int | None, error: BaseException | None) -> None:
            assert error is None
            got.append(pid)
            if len(got) == 2500:
                done.set()

        for i in range(2500):
            nodes[i % 2].allocate(take)
        await asyncio.wait_for(done.wait(), 30)
        assert len(set(got)) == 2500 and None not in got
    finally:
        await pool.close()


def _serve(dsn: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "kcoord",
        "serve",
        "--cluster",
        dsn,
        "--node-id",
        "1",
        "--listen",
        "127.0.0.1:0",
    ]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)


async def test_a_node_refuses_to_start_without_a_reachable_initialized_cluster(cluster_dsn: str) -> None:
    no_schema = await asyncio.to_thread(_serve, cluster_dsn)
    assert no_schema.returncode == 1
    assert "kcoord cluster init" in no_schema.stderr and len(no_schema.stderr.strip().splitlines()) == 1
    unreachable = await asyncio.to_thread(_serve, "postgresql://postgres:secret@127.0.0.1:1/x")
    assert unreachable.returncode == 1 and "cannot connect" in unreachable.stderr
    assert "secret" not in unreachable.stderr and len(unreachable.stderr.strip().splitlines()) == 1


def test_replica_set_is_the_leader_then_the_next_live_nodes_by_weight_or_the_assignment() -> None:
    from kcoord.cluster.placement import rendezvous, replica_set

    key = ("t", 0)
    live = [1, 2, 3, 4]
    leader = rendezvous(key, live)
    assert leader is not None
    three = replica_set(key, (), live, leader, 3)
    assert len(three) == 3 and three[0] == leader and len(set(three)) == 3
    # The next in rendezvous order: with the leader gone, it would be the one to take over.
    assert three[1] == rendezvous(key, [n for n in live if n != leader])
    assert replica_set(key, (), live, leader, 9) == three + tuple(n for n in live if n not in three)
    assert replica_set(key, (), live, -1, 2) == tuple(three[:2])  # no leader: the first in line
    assert replica_set(key, (4, 1), live, leader, 3) == (4, 1)  # AlterPartitionReassignments' list
