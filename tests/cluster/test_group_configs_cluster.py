"""Group configs in cluster mode (issue 33; cluster-wide since issue 34): the node that coordinates the
group and any other node alter and describe them alike (records every node follows, docs/compat.md),
and after the owner is killed (-9) the node that takes the shard over still describes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cluster.nodes import Node, init_cluster, nodes, owner_of, rpc, until
from tests.cluster.test_failover import TTL_MS, _by_id, _settled

GROUP, GROUP_CONFIG = 32, 8
INTERVAL = "consumer.heartbeat.interval.ms"


def _alter(node: Node, group: str, value: str) -> dict[str, Any]:
    resource = {
        "resource_type": GROUP,
        "resource_name": group,
        "configs": [{"name": INTERVAL, "config_operation": 0, "value": value}],
    }
    return rpc(node.address, 44, 1, {"resources": [resource], "validate_only": False})["responses"][0]  # type: ignore[no-any-return]


def _described(node: Node, group: str) -> tuple[int, str | None, int | None]:
    body = {"resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": [INTERVAL]}]}
    result = rpc(node.address, 32, 4, {**body, "include_synonyms": False, "include_documentation": False})
    answer = result["results"][0]
    if answer["error_code"]:
        return int(answer["error_code"]), None, None
    (entry,) = answer["configs"]
    return 0, entry["value"], entry["config_source"]


def test_a_groups_configs_move_with_its_shard_on_kill_9(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        group = "configured"
        owner = _by_id(cluster, _settled(cluster, group))
        other = next(n for n in cluster if n is not owner)
        assert _alter(owner, group, "7000")["error_code"] == 0
        assert _described(owner, group) == (0, "7000", GROUP_CONFIG)
        assert _alter(other, group, "8000")["error_code"] == 0
        assert _described(owner, group) == _described(other, group) == (0, "8000", GROUP_CONFIG)
        owner.kill()
        until(lambda: owner_of(other, group) == other.node_id or None, 20, "the survivor owns the group")
        described = until(lambda: ((d := _described(other, group))[0] == 0 and d) or None, 20, "described")
        assert described == (0, "8000", GROUP_CONFIG)
