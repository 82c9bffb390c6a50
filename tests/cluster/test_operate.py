"""Operating a cluster: `kcoord cluster status [--json]` and each node's cluster series on /metrics,
against real node processes and the session PostgreSQL (lease TTL 1.5 s)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.nodes import commit, fetch_offset, free_port, init_cluster, nodes, owner_of, until
from tests.cluster.test_partition_nodes import PARTITIONS as PARTITIONS_6
from tests.cluster.test_partition_nodes import TOPIC, _produce, agreed_leaders
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO
from tests.server.wire import connect, create_topic

TTL_MS = 1500
SHARDS = 50
PARTITIONS = 4


def _status(dsn: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "cluster", "status", "--cluster", dsn, *flags],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _report(dsn: str) -> dict[str, Any]:
    done = _status(dsn, "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _metrics(port: int) -> dict[str, float]:
    """The kcoord_cluster_* samples of one node: 'name{labels}' -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    samples = re.findall(r"^(kcoord_cluster_\S+) (\S+)$", text, re.MULTILINE)
    return {name: float(value) for name, value in samples}


def test_status_refuses_a_bad_dsn_and_a_missing_schema_then_lists_the_free_shards(cluster_dsn: str) -> None:
    unreachable = _status(f"postgresql://kcoord:secret@127.0.0.1:{free_port()}/none")
    assert unreachable.returncode == 1 and unreachable.stdout == ""
    assert len(unreachable.stderr.splitlines()) == 1 and "secret" not in unreachable.stderr
    empty = _status(cluster_dsn)
    assert empty.returncode == 1 and "no kcoord schema" in empty.stderr
    init_cluster(cluster_dsn)
    report = _report(cluster_dsn)
    assert report["nodes"] == [] and report["partitions"] == []
    assert [s["shard"] for s in report["shards"]] == list(range(SHARDS))
    assert all(s["owner"] is None and not s["live"] and s["expires_in_ms"] is None for s in report["shards"])
    lines = _status(cluster_dsn).stdout.splitlines()
    assert lines[0] == "shard 0 owner=- epoch=0 free expires_in_ms=-" and len(lines) == SHARDS


def _settled(ports: dict[int, int], dsn: str) -> tuple[dict[int, dict[str, float]], dict[str, Any]] | None:
    """Each node's samples and the status report once the shards sit on their preferred nodes, every
    partition is led, and the report agrees with the metrics: nothing moves any more."""
    seen = {node_id: _metrics(port) for node_id, port in ports.items()}
    for node_id, samples in seen.items():
        preferred = sum(1 for s in range(SHARDS) if preferred_owner(s, list(ports)) == node_id)
        if samples.get('kcoord_cluster_shards{state="active"}') != preferred:
            return None
    if sum(m.get("kcoord_cluster_partitions_led", 0) for m in seen.values()) != PARTITIONS:
        return None
    report = _report(dsn)
    for node_id, samples in seen.items():
        led = sum(1 for p in report["partitions"] if p["leader"] == node_id)
        if led != samples["kcoord_cluster_partitions_led"]:
            return None
    return seen, report


def test_status_and_metrics_show_the_shards_and_partitions_and_follow_a_kill(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS, "--http-listen", "127.0.0.1:0") as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", PARTITIONS)["error_code"] == 0
        ports = {n.node_id: int(n.wait_for(r"http endpoint on \S+:(\d+)").group(1)) for n in cluster}
        seen, report = until(lambda: _settled(ports, cluster_dsn), 30, "shards and partitions placed")
        assert [(n["node_id"], n["port"], n["live"]) for n in report["nodes"]] == [
            (n.node_id, n.port, True) for n in cluster
        ]
        for node_id, samples in seen.items():
            assert samples["kcoord_cluster_database_reachable"] == 1
            assert samples['kcoord_cluster_lease_renewals_total{lease="node",result="ok"}'] >= 1
            owned = sum(1 for s in report["shards"] if s["owner"] == node_id)
            assert owned == samples['kcoord_cluster_shards{state="active"}']
        leaders = {(p["topic"], p["partition"]): p["leader"] for p in report["partitions"]}
        assert set(leaders) == {("t", p) for p in range(PARTITIONS)} and set(leaders.values()) <= {1, 2}
        assert all(p["live"] and p["epoch"] >= 1 for p in report["partitions"])
        lines = _status(cluster_dsn).stdout.splitlines()
        assert sum(line.startswith("partition t-") for line in lines) == PARTITIONS

        victim = cluster[1]
        victim.kill()
        survivor = ports[1]

        def took_over() -> dict[str, float] | None:
            samples = _metrics(survivor)
            full = samples['kcoord_cluster_shards{state="active"}'] == SHARDS
            return samples if full and samples["kcoord_cluster_partitions_led"] == PARTITIONS else None

        after = until(took_over, 30, "node 1 holds every shard and partition")
        before = seen[1]

        def grew(name: str) -> float:  # this node's own stalls (an expired lease of its own) count too
            return after[name] - before.get(name, 0)

        moved = SHARDS - before['kcoord_cluster_shards{state="active"}']
        assert grew('kcoord_cluster_failovers_total{lease="shard"}') == moved
        assert grew('kcoord_cluster_lease_acquisitions_total{lease="shard",previous="other"}') == moved
        led_by_victim = PARTITIONS - before["kcoord_cluster_partitions_led"]
        assert grew('kcoord_cluster_failovers_total{lease="partition"}') == led_by_victim
        report = _report(cluster_dsn)
        assert [(n["node_id"], n["live"]) for n in report["nodes"]] == [(1, True), (2, False)]
        assert {s["owner"] for s in report["shards"]} == {1}
        assert {p["leader"] for p in report["partitions"]} == {1}
        assert _status(cluster_dsn).stdout.splitlines()[1].split()[:4] == [
            "node", "2", f"127.0.0.1:{victim.port}", "expired"
        ]  # fmt: skip


def test_sigterm_hands_shards_and_partitions_over_well_under_the_lease_ttl(
    tmp_path: Path, cluster_dsn: str
) -> None:
    """A graceful stop releases its leases: the successor commits and produces without waiting for
    the 10 s TTL. Times from SIGTERM to the first acknowledged commit and produce are printed."""
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], 10_000) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS_6)["error_code"] == 0
        led = agreed_leaders(cluster)
        partition = next(p for p, leader in led.items() if leader == 2)
        group = next(f"s-{i}" for i in range(100) if preferred_owner(shard_of(f"s-{i}"), [1, 2]) == 2)
        leaving, successor = cluster[1], cluster[0]
        until(lambda: owner_of(successor, group) == 2 or None, 20, "node 2 owns the group")
        until(lambda: commit(leaving.address, group, TOPIC, 1) == 0 or None, 10, "first commit")
        assert _produce(leaving, partition, b"before")["error_code"] == 0
        stopped_at = time.monotonic()
        assert leaving.stop() == 0  # SIGTERM: drain, release, leave, exit 0
        took: dict[str, float] = {}
        deadline = stopped_at + 8
        while len(took) < 2 and time.monotonic() < deadline:
            if "commit" not in took and commit(successor.address, group, TOPIC, 2) == 0:
                took["commit"] = time.monotonic() - stopped_at
            if "produce" not in took and _produce(successor, partition, b"after")["error_code"] == 0:
                took["produce"] = time.monotonic() - stopped_at
        print(f"\nGRACEFUL HANDOVER (ttl 10000 ms) SIGTERM -> first ack on the successor: {took}")
        assert set(took) == {"commit", "produce"} and max(took.values()) < 5, took
        assert fetch_offset(successor.address, group, TOPIC) == (0, 2)


def test_the_collector_counts_failovers_apart_from_handovers_and_reports_the_database_away() -> None:
    """Pure: the series from given counts (the database-away case is not worth a PostgreSQL stop here;
    test_failover.py stops it for /readyz)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from kcoord.cluster.cluster_metrics import ClusterCollector, ClusterSources
    from kcoord.coordinator.runtime import Phase

    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        ClusterCollector(
            ClusterSources(
                shard_states=lambda: {0: Phase.ACTIVE, 1: Phase.ACTIVE, 7: Phase.LOADING},
                partitions_led=lambda: 3,
                renewals=lambda: {"shard": {"ok": 9, "failed": 2}, "node": {}},
                acquisitions=lambda: {"shard": {"free": 5, "other": 2, "self": 1}, "partition": {"free": 3}},
                reachable=lambda: False,
            )
        )
    )
    text = generate_latest(registry).decode()
    samples = dict(re.findall(r"^(kcoord_cluster_\S+) (\S+)$", text, re.MULTILINE))
    assert samples['kcoord_cluster_shards{state="active"}'] == "2.0"
    assert samples['kcoord_cluster_shards{state="loading"}'] == "1.0"
    assert samples['kcoord_cluster_shards{state="draining"}'] == "0.0"
    assert samples["kcoord_cluster_partitions_led"] == "3.0"
    assert samples['kcoord_cluster_lease_renewals_total{lease="shard",result="failed"}'] == "2.0"
    assert samples['kcoord_cluster_failovers_total{lease="shard"}'] == "3.0"  # other + self, not free
    assert samples['kcoord_cluster_failovers_total{lease="partition"}'] == "0.0"
    assert samples["kcoord_cluster_database_reachable"] == "0.0"
