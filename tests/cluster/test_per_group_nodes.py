"""Three real nodes, groups owned by each: a request naming all of them, sent to any node, is answered
per group as its owner would (issue 35 item 5): the node's own groups answered, the others
NOT_COORDINATOR, for OffsetFetch v8, DescribeGroups, ConsumerGroupDescribe and DeleteGroups; ListGroups
lists each group on its owner only."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.nodes import NOT_COORDINATOR, Node, commit, init_cluster, nodes, owner_of, rpc, until
from tests.server.wire import connect, create_topic

IDS = [1, 2, 3]
TTL_MS = 5000  # nothing here fails over: a longer lease keeps the owners still on a busy machine
GROUP_ID_NOT_FOUND = 69
TOPICS = [{"name": "t", "partition_indexes": [0]}]


def _owned(owner: int, count: int) -> list[str]:
    """`count` group ids of distinct shards whose preferred owner among IDS is `owner`."""
    shards: set[int] = set()
    found: list[str] = []
    for name in (f"pg-{owner}-{i}" for i in itertools.count()):
        shard = shard_of(name)
        if preferred_owner(shard, IDS) == owner and shard not in shards:
            shards.add(shard)
            found.append(name)
            if len(found) == count:
                return found
    raise AssertionError("unreachable")


def _served(cluster: list[Node], owner: Node, group: str, offset: int) -> None:
    """Wait until every node names `owner` for `group` and the owner acknowledges a commit."""

    def ready() -> bool | None:
        if any(owner_of(n, group) != owner.node_id for n in cluster):
            return None
        return True if commit(owner.address, group, "t", offset) == 0 else None

    until(ready, 60, f"{group} served by node {owner.node_id}")


def _fetch(node: Node, groups: list[str]) -> list[dict[str, Any]]:
    body = {"groups": [{"group_id": g, "topics": TOPICS} for g in groups], "require_stable": False}
    return list(rpc(node.address, 9, 8, body)["groups"])


def _codes(entries: list[dict[str, Any]], key: str = "group_id") -> list[tuple[str, int]]:
    return [(str(e[key]), int(e["error_code"])) for e in entries]


def test_a_request_naming_groups_of_three_owners_is_answered_per_group_on_every_node(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, IDS, TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
        owned = {node.node_id: _owned(node.node_id, 2) for node in cluster}
        for node in cluster:
            for group in owned[node.node_id]:
                _served(cluster, node, group, 10 * node.node_id)
        everything = [g for node in cluster for g in owned[node.node_id]]
        mixed = list(itertools.chain.from_iterable(zip(*owned.values(), strict=True)))  # owners interleaved
        for node in cluster:
            mine = set(owned[node.node_id])
            expected = [(g, 0 if g in mine else NOT_COORDINATOR) for g in mixed]
            fetched = _fetch(node, mixed)
            assert _codes(fetched) == expected
            for entry in fetched:
                offsets = [p["committed_offset"] for t in entry["topics"] for p in t["partitions"]]
                assert offsets == ([10 * node.node_id] if entry["group_id"] in mine else [])
            described = rpc(node.address, 15, 5, {"groups": mixed})["groups"]
            assert _codes(described) == expected
            assert {d["group_state"] for d in described if d["group_id"] in mine} == {"Empty"}
            consumer = rpc(node.address, 69, 0, {"group_ids": mixed})["groups"]  # classic groups here
            assert _codes(consumer) == [
                (g, GROUP_ID_NOT_FOUND if g in mine else NOT_COORDINATOR) for g in mixed
            ]
            listed = rpc(node.address, 16, 4, {"states_filter": []})
            assert listed["error_code"] == 0
            assert sorted(g["group_id"] for g in listed["groups"] if g["group_id"] in everything) == sorted(
                mine
            )

        first = cluster[0]
        deleted = rpc(first.address, 42, 2, {"groups_names": mixed})["results"]
        mine = set(owned[first.node_id])
        assert _codes(deleted) == [(g, 0 if g in mine else NOT_COORDINATOR) for g in mixed]
        for entry in _fetch(first, owned[first.node_id]):  # both of its shards' groups are gone
            assert entry["error_code"] == 0
            assert [p["committed_offset"] for p in entry["topics"][0]["partitions"]] == [-1]
        for node in cluster[1:]:  # the other owners' groups are untouched
            for entry in _fetch(node, owned[node.node_id]):
                assert entry["topics"][0]["partitions"][0]["committed_offset"] == 10 * node.node_id
