"""Two alters of one group's configs through two nodes at the same moment both take effect
(kcoord/cluster/migration_metadata_expect.py): each node computes the group's whole new set from its
copy, so the second write was based on a set without the first one's change and lost it. Now the
database refuses a write based on a row written since, and the node computes the set again on top of
the other change, as Kafka's controller applies concurrent alters in turn
(ConfigurationControlManager.incrementalAlterConfigs). Real nodes, requests sent at once on two
sockets, every round checked on both nodes."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.nodes import init_cluster, nodes
from tests.cluster.test_group_configs_everywhere import GROUP_RESOURCE, described
from tests.server.wire import connect, decode_response, read_frame, send

pytestmark = pytest.mark.timeout(240)

TTL_MS = 1500
LIMIT, LOCK = "share.delivery.count.limit", "share.record.lock.duration.ms"
INCREMENTAL_ALTER_CONFIGS = 44
ROUNDS = 12


def _set(group: str, key: str, value: str) -> dict[str, Any]:
    entry = {"name": key, "config_operation": 0, "value": value}  # SET: the other keys stay
    resource = {"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [entry]}
    return {"resources": [resource], "validate_only": False}


def _answer(sock: socket.socket) -> dict[str, Any]:
    return decode_response(INCREMENTAL_ALTER_CONFIGS, 1, read_frame(sock))[1]


def test_two_nodes_altering_one_group_at_once_keep_both_changes(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as (first, second):
        lost = []
        for round_ in range(ROUNDS):
            limit, lock = str(2 + round_ % 8), str(15_000 + 1_000 * round_)
            with connect(first.address, 30) as one, connect(second.address, 30) as two:
                send(one, INCREMENTAL_ALTER_CONFIGS, 1, round_, _set("g", LIMIT, limit))
                send(two, INCREMENTAL_ALTER_CONFIGS, 1, round_, _set("g", LOCK, lock))
                answers = [_answer(s) for s in (one, two)]
            assert [a["responses"][0]["error_code"] for a in answers] == [0, 0], answers
            for node in (first, second):  # each alter is answered once every live node applied it
                seen = described(node, "g", [LIMIT, LOCK])
                assert not isinstance(seen, int), seen
                if (seen[LIMIT][0], seen[LOCK][0]) != (limit, lock):
                    lost.append((round_, node.node_id, seen[LIMIT][0], seen[LOCK][0]))
        assert not lost, f"(round, node, {LIMIT}, {LOCK}) where a change was lost: {lost}"
