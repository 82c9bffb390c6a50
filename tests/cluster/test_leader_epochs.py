"""OffsetForLeaderEpoch (issue 33 item 6) across a leader change in cluster mode, real node processes:
a consumer's KIP-320 check after the change (the epoch of the last batch it read, 0) gets the new
leader's log end offset, which is at or past its position, so it finds no truncation, and there is
none: the new lease holder continues the same durable log. A node that does not lead the partition
answers NOT_LEADER_OR_FOLLOWER, as for Fetch, so the client goes to the leader Metadata names."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tests.cluster.nodes import Node, init_cluster, nodes, rpc, until
from tests.cluster.test_partition_nodes import PARTITIONS, TOPIC, agreed_leaders
from tests.server.test_dataplane_wire import batch
from tests.server.wire import connect, create_topic

NOT_LEADER_OR_FOLLOWER = 6


def _produce(node: Node, partition: int, count: int) -> dict[str, Any]:
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch(count)}]}],
    }  # fmt: skip
    return rpc(node.address, 0, 12, body)["responses"][0]["partition_responses"][0]  # type: ignore[no-any-return]


def _end_of_epoch(node: Node, partition: int, epoch: int) -> tuple[int, int, int]:
    body = {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": partition, "current_leader_epoch": -1, "leader_epoch": epoch},
    ]}]}  # fmt: skip
    answer = rpc(node.address, 23, 4, body)["topics"][0]["partitions"][0]
    return int(answer["error_code"]), int(answer["leader_epoch"]), int(answer["end_offset"])


def test_offset_for_leader_epoch_after_a_leader_change_finds_no_truncation(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], 10_000) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        led = agreed_leaders(cluster)
        leader = next(n for n in cluster if n.node_id in led.values())
        other = next(n for n in cluster if n is not leader)
        partition = next(p for p, node_id in led.items() if node_id == leader.node_id)
        assert _produce(leader, partition, 3)["error_code"] == 0
        assert _end_of_epoch(leader, partition, 0) == (0, 0, 3)
        assert _end_of_epoch(other, partition, 0)[0] == NOT_LEADER_OR_FOLLOWER
        assert leader.stop(signal.SIGTERM) == 0  # hands its leases over at once
        until(lambda: _produce(other, partition, 2)["error_code"] == 0 or None, 15, "the survivor leads")
        # a consumer at offset 3 after reading epoch 0's batches: the end of epoch 0 is not below it
        assert _end_of_epoch(other, partition, 0) == (0, 0, 5)
        assert _end_of_epoch(other, partition, 1) == (0, -1, -1)  # no later epoch exists
