"""A stock share consumer sees a group's configs on every partition leader (issue 34 in cluster mode):
`share.auto.offset.reset=earliest` set through a node that does not coordinate the group, records
produced to three partitions led by three nodes before any consumer, and a confluent-kafka
`ShareConsumer` process (tests/cluster/share_worker.py) reads every one of them. Before the change the
alter was refused there (NOT_COORDINATOR), and a partition led by another node than the coordinator
started at its log end (the broker default, latest), so its records never came."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.events_worker import start_worker
from tests.cluster.nodes import init_cluster, nodes, until
from tests.cluster.test_failover import _by_id, _settled
from tests.cluster.test_group_configs_everywhere import alter
from tests.cluster.test_share_nodes import PARTITIONS, TOPIC, _delivered, agreed_leaders, produce
from tests.server.wire import connect, create_topic

TTL_MS = 1500


def test_a_share_consumer_reads_from_the_earliest_on_every_leader(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        led = agreed_leaders(cluster)
        group = "from-the-start"
        coordinator = _by_id(cluster, _settled(cluster, group))
        assert set(led.values()) - {coordinator.node_id}, "some partition is led by another node"
        other = next(n for n in cluster if n is not coordinator)
        assert alter(other, group, {"share.auto.offset.reset": "earliest"}) == 0
        values = {f"v-{p}-{i}": p for p in range(PARTITIONS) for i in range(5)}
        for value, partition in values.items():
            produce(cluster, partition, value)
        bootstrap = ",".join(f"{n.address[0]}:{n.address[1]}" for n in cluster)
        stop = tmp_path / "stop"
        worker = start_worker(
            "tests.cluster.share_worker", [bootstrap, group, TOPIC, "120", str(stop)], tmp_path, "share"
        )
        try:
            until(lambda: set(values) <= {e["value"] for e in _delivered([worker])} or None, 90,
                  "every record produced before the consumer delivered", step=0.2)  # fmt: skip
        finally:
            stop.touch()
            events = worker.events(timeout=60)
        fatal = [e for e in events if e["event"] == "poll_error" and "FATAL" in e["error"]]
        assert not fatal, fatal
