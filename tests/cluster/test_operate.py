"""Operating a cluster: `kcoord cluster status [--json]` and each node's cluster series on /metrics,
against real node processes and the session PostgreSQL (lease TTL 1.5 s)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.cluster.nodes import free_port, init_cluster, nodes, until
from tests.kcoord_process import REPO
from tests.server.wire import connect, create_topic

TTL_MS = 1500
SHARDS = 50
PARTITIONS = 4


def _status(dsn: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
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


def _spread(ports: dict[int, int]) -> dict[int, dict[str, float]] | None:
    """Each node's samples once the 50 shards and the partitions are all held, by both nodes."""
    seen = {node_id: _metrics(port) for node_id, port in ports.items()}
    shards = [m.get('kcoord_cluster_shards{state="active"}', 0) for m in seen.values()]
    led = [m.get("kcoord_cluster_partitions_led", 0) for m in seen.values()]
    if sum(shards) == SHARDS and sum(led) == PARTITIONS and all(shards):
        return seen
    return None


def test_status_and_metrics_show_the_shards_and_partitions_and_follow_a_kill(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS, "--http-listen", "127.0.0.1:0") as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, "t", PARTITIONS)["error_code"] == 0
        ports = {n.node_id: int(n.wait_for(r"http endpoint on \S+:(\d+)").group(1)) for n in cluster}
        seen = until(lambda: _spread(ports), 30, "both nodes hold shards, every partition led")
        report = _report(cluster_dsn)
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
        moved = SHARDS - seen[1]['kcoord_cluster_shards{state="active"}']
        assert after['kcoord_cluster_failovers_total{lease="shard"}'] == moved
        assert after['kcoord_cluster_lease_acquisitions_total{lease="shard",previous="other"}'] == moved
        assert (
            after['kcoord_cluster_failovers_total{lease="partition"}']
            == PARTITIONS - seen[1]["kcoord_cluster_partitions_led"]
        )
        report = _report(cluster_dsn)
        assert [(n["node_id"], n["live"]) for n in report["nodes"]] == [(1, True), (2, False)]
        assert {s["owner"] for s in report["shards"]} == {1}
        assert {p["leader"] for p in report["partitions"]} == {1}
        assert _status(cluster_dsn).stdout.splitlines()[1].split()[:4] == [
            "node", "2", f"127.0.0.1:{victim.port}", "expired"
        ]  # fmt: skip
