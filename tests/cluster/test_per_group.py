"""Requests naming groups of several shards are answered per group (issue 35 item 5), through the edge's
routing middleware around the real API handlers and group coordinator: a group of a shard served here
is answered, the others NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, each on its own; a
DeleteGroups writes each shard apart, so a failed shard fails only its groups. Over three real nodes:
tests/cluster/test_per_group_nodes.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kcoord.broker.apis import HANDLERS
from kcoord.broker.context import RequestMeta
from kcoord.broker.middleware import handler_table
from kcoord.cluster.edge import ClusterRouting
from kcoord.cluster.membership import ClusterView
from kcoord.cluster.routing import RoutingRecordLog
from kcoord.coordinator.groups import GroupManager
from kcoord.coordinator.runtime import Phase, ShardPhases
from kcoord.protocol.errors import ErrorCode
from tests.cluster.helpers import group_in
from tests.unit.conftest import Harness
from tests.unit.fakes import MemoryRecordLog

SHARDS = 8
SERVED, FAILING, LOADING, ELSEWHERE = 1, 2, 3, 4
A, B, C, D = (group_in(s, SHARDS, "pg") for s in (SERVED, FAILING, LOADING, ELSEWHERE))
NC, LOAD = int(ErrorCode.NOT_COORDINATOR), int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


class _ShardLog(MemoryRecordLog):
    failure: BaseException | None = None


class _Node:
    """One node's group coordinator over per-shard logs, behind the cluster edge."""

    def __init__(self) -> None:
        self.phases = ShardPhases(SHARDS, Phase.NOT_OWNED)
        self.logs = {SERVED: _ShardLog(), FAILING: _ShardLog()}
        routing = RoutingRecordLog(SHARDS, self.logs.get, MemoryRecordLog(), lambda *_: None)  # type: ignore[arg-type]
        self.harness = Harness(phases=self.phases)
        h = self.harness
        h.mgr = GroupManager(h.config, h.clock, h.timers, routing, phases=self.phases)  # type: ignore[arg-type]
        h.mgr.on_loaded()
        for shard in self.logs:
            self.phases.set(shard, Phase.ACTIVE)
        self.table = handler_table([ClusterRouting(self.phases.of, ClusterView, SHARDS)], HANDLERS)
        self.ctx = SimpleNamespace(manager=h.mgr, authorizer=None, stats=None)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        answers: list[dict[str, Any]] = []
        self.table[api_key](self.ctx, body, RequestMeta(version, "c", "/127.0.0.1"), answers.append)
        assert len(answers) == 1, answers
        return answers[0]


def _committed(node: _Node, *groups: str) -> None:
    for group in groups:
        reply = node.harness.commit({("t", 0): 5}, group=group)
        assert reply["topics"][0]["partitions"][0]["error_code"] == 0


async def test_offset_fetch_v8_answers_each_group_by_its_shard() -> None:
    node = _Node()
    _committed(node, A, B)
    node.phases.set(LOADING, Phase.LOADING)
    topics = [{"name": "t", "partition_indexes": [0]}]
    body = {"groups": [{"group_id": g, "topics": topics} for g in (D, A, C, B)], "require_stable": False}
    answer = node.call(9, 8, body)
    by_group = {g["group_id"]: g for g in answer["groups"]}
    assert [g["group_id"] for g in answer["groups"]] == [D, A, C, B]  # the request's order
    assert by_group[D]["error_code"] == NC and by_group[C]["error_code"] == LOAD
    for served in (A, B):
        assert by_group[served]["error_code"] == 0
        assert by_group[served]["topics"][0]["partitions"][0]["committed_offset"] == 5
    # Before v8 one group: refused whole as before, with the version's error body.
    assert node.call(9, 7, {"group_id": D, "topics": topics, "require_stable": False})["error_code"] == NC


async def test_describe_groups_and_consumer_group_describe_answer_each_group_by_its_shard() -> None:
    node = _Node()
    _committed(node, A)
    described = node.call(15, 5, {"groups": [A, D, C], "include_authorized_operations": False})
    assert [(g["group_id"], g["error_code"]) for g in described["groups"]] == [(A, 0), (D, NC), (C, NC)]
    node.phases.set(LOADING, Phase.LOADING)
    described = node.call(69, 0, {"group_ids": [D, A, C], "include_authorized_operations": False})
    codes = {g["group_id"]: g["error_code"] for g in described["groups"]}
    assert codes == {D: NC, A: int(ErrorCode.GROUP_ID_NOT_FOUND), C: LOAD}  # A: a classic group


async def test_delete_groups_writes_each_shard_apart_and_a_failed_shard_fails_only_its_groups() -> None:
    node = _Node()
    _committed(node, A, B)
    node.logs[FAILING].fail_with = OSError("the shard's write failed")
    answer = node.call(42, 2, {"groups_names": [B, D, A, B]})
    assert [(r["group_id"], r["error_code"]) for r in answer["results"]] == [(B, NC), (D, NC), (A, 0)]
    assert len(node.logs[SERVED].batches[-1]) == 2  # one write: A's offset and group tombstones
    assert node.harness.mgr.group(A) is None
    assert node.harness.mgr.group(B) is not None  # restored: its shard's write failed
    assert node.harness.mgr.committed_offsets(B)[("t", 0)].offset == 5


async def test_list_groups_lists_the_served_shards_and_answers_loading_while_one_loads() -> None:
    node = _Node()
    _committed(node, A, B)
    listed = node.call(16, 4, {"states_filter": []})
    assert listed["error_code"] == 0 and sorted(g["group_id"] for g in listed["groups"]) == sorted([A, B])
    node.phases.set(FAILING, Phase.DRAINING)  # B's groups still in memory while its appends settle
    listed = node.call(16, 4, {"states_filter": []})
    assert [g["group_id"] for g in listed["groups"]] == [A]
    node.phases.set(LOADING, Phase.LOADING)
    assert node.call(16, 4, {"states_filter": []}) == {"error_code": LOAD, "groups": []}
