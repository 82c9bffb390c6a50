"""A node whose lease lapsed stays in Metadata's broker list for a while, never as a leader
(kcoord/cluster/membership.py LAPSED_LISTED_S): librdkafka decommissions a broker that leaves
Metadata and fails the produce requests in flight to it as not persisted, and an idempotent producer
then sends again, under a bumped epoch, what a paused node had already stored (the duplicate of the
stop 42 chaos run). DescribeCluster, replica placement and the leaders keep to the live nodes, and a
node that stops gracefully leaves Metadata at once. DescribeCluster v2 lists a lapsed node fenced when
asked to (KIP-1073 include_fenced_brokers)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.cluster.nodes import init_cluster, nodes, rpc, until
from tests.server.order_wire import metadata
from tests.server.wire import connect, create_topic

pytestmark = pytest.mark.timeout(180)

TTL_MS = 1500
TOPIC = "lapsed"
PARTITIONS = 4
DESCRIBE_CLUSTER = 60


def _described(address: tuple[str, int]) -> set[int]:
    answer = rpc(address, DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    return {int(b["broker_id"]) for b in answer["brokers"]}


def _fenced(address: tuple[str, int]) -> dict[int, bool]:
    """DescribeCluster v2 with include_fenced_brokers (KIP-1073): broker id -> is_fenced."""
    body = {"include_cluster_authorized_operations": False, "endpoint_type": 1,
            "include_fenced_brokers": True}  # fmt: skip
    answer = rpc(address, DESCRIBE_CLUSTER, 2, body)
    return {int(b["broker_id"]): bool(b["is_fenced"]) for b in answer["brokers"]}


def _metadata(address: tuple[str, int]) -> tuple[set[int], dict[int, int]]:
    """(the broker ids listed, partition -> leader id) of TOPIC."""
    answer = rpc(address, *metadata(TOPIC))
    (topic,) = answer["topics"]
    leaders = {int(p["partition_index"]): int(p["leader_id"]) for p in topic["partitions"]}
    return {int(b["node_id"]) for b in answer["brokers"]}, leaders


def test_a_paused_node_stays_listed_but_leads_nothing_and_a_graceful_stop_leaves_at_once(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as (first, second):
        with connect(first.address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0

        def both_lead() -> bool | None:
            listed, leaders = _metadata(first.address)
            return True if listed == {1, 2} and set(leaders.values()) == {1, 2} else None

        until(both_lead, 30, "both nodes listed and leading")
        second.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:

            def lapsed() -> tuple[set[int], dict[int, int]] | None:
                if _described(first.address) != {1}:
                    return None
                listed, leaders = _metadata(first.address)
                return (listed, leaders) if set(leaders.values()) == {1} else None

            listed, _ = until(lapsed, 30, "node 1 leads every partition and describes itself alone")
            # The paused node's lease has lapsed: it leads nothing, DescribeCluster has dropped it,
            # and Metadata still lists it, so a client keeps the requests in flight to it.
            assert listed == {1, 2}
            assert _metadata(first.address)[0] == {1, 2}
            assert _fenced(first.address) == {1: False, 2: True}  # a fenced broker, as Kafka's
        finally:
            second.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        until(lambda: _described(first.address) == {1, 2} or None, 30, "node 2 is live again")
        assert second.stop() == 0  # graceful: the row expires past the listing window
        until(lambda: _metadata(first.address)[0] == {1} or None, 10, "Metadata drops a node that left")
        assert _described(first.address) == {1}
        assert _fenced(first.address) == {1: False}
