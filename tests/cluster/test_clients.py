"""Stock clients of three libraries (kafka-python, aiokafka, confluent-kafka with both group
protocols) against three nodes: they bootstrap from all of them, find their group's owner, and
commit; a kill -9 of the owner of their groups under that commit load loses no acknowledged commit.

Each client is a subprocess (`commit_worker.py`) that prints every acknowledged commit.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.events_worker import EventsWorker, start_worker
from tests.cluster.nodes import Node, fetch_offset, init_cluster, nodes, owner_of, until
from tests.server.wire import connect, create_topic

log = logging.getLogger(__name__)

TTL_MS = 1500
IDS = [1, 2, 3]


@dataclass
class Worker:
    lib: str
    protocol: str
    group: str
    proc: EventsWorker
    events: list[dict[str, Any]] = field(default_factory=list)

    def finish(self, timeout: float) -> None:
        self.events = self.proc.events(timeout)

    def acked(self) -> list[tuple[int, float]]:
        return [(e["acked"], e["t"]) for e in self.events if "acked" in e]

    def committed(self) -> int | None:
        return next((e["committed"] for e in self.events if "committed" in e), None)


def _start(lib: str, protocol: str, bootstrap: str, group: str, seconds: float, log_dir: Path) -> Worker:
    argv = [
        sys.executable,
        "-m",
        "tests.cluster.commit_worker",
        lib,
        protocol,
        bootstrap,
        "t",
        group,
        str(seconds),
    ]
    proc = start_worker(argv[2], argv[3:], log_dir, f"{lib}-{protocol}-{group}")
    return Worker(lib, protocol, group, proc)


def _groups_owned_by(owner: int, count: int, prefix: str) -> list[str]:
    names = (f"{prefix}-{i}" for i in itertools.count())
    return list(itertools.islice((g for g in names if preferred_owner(shard_of(g), IDS) == owner), count))


def _settled(cluster: list[Node], group: str) -> int:
    preferred = preferred_owner(shard_of(group), [n.node_id for n in cluster if n.alive()])
    return until(
        lambda: preferred if all(owner_of(n, group) == preferred for n in cluster if n.alive()) else None,
        30, f"{group} settled on node {preferred}",
    )  # fmt: skip


def _setup(cluster: list[Node]) -> str:
    with connect(cluster[0].address) as sock:
        assert create_topic(sock, "t", 3)["error_code"] == 0
    return ",".join(n.bootstrap for n in cluster)


def test_three_libraries_and_both_protocols_commit_through_the_owner_of_each_group(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, IDS, TTL_MS) as cluster:
        bootstrap = _setup(cluster)
        plan = [("kafka-python", "classic", 1), ("aiokafka", "classic", 2), ("confluent", "classic", 3),
                ("confluent", "consumer", 1)]  # fmt: skip
        groups = {
            lib + protocol: _groups_owned_by(owner, 1, f"{lib}-{protocol}")[0]
            for lib, protocol, owner in plan
        }
        for group in groups.values():
            _settled(cluster, group)
        workers = [
            _start(lib, protocol, bootstrap, groups[lib + protocol], 4, tmp_path) for lib, protocol, _ in plan
        ]
        for worker in workers:
            worker.finish(120)
        for worker, (_, _, owner) in zip(workers, plan, strict=True):
            acked = worker.acked()
            assert acked, f"{worker.lib}/{worker.protocol}: no commit acknowledged: {worker.events[-5:]}"
            last = acked[-1][0]
            assert worker.committed() == last, (worker.lib, worker.protocol, worker.committed(), last)
            node = next(n for n in cluster if n.node_id == owner)
            part = next(e["assigned"] for e in worker.events if "assigned" in e)[0]
            assert fetch_offset(node.address, worker.group, "t", part) == (0, last)


def test_kill_9_of_the_owner_under_stock_client_commits_loses_no_acknowledged_commit(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    victim_id = 2
    with nodes(tmp_path, cluster_dsn, IDS, TTL_MS) as cluster:
        bootstrap = _setup(cluster)
        plan = [("confluent", "classic"), ("kafka-python", "classic"), ("confluent", "consumer")]
        groups = _groups_owned_by(victim_id, len(plan), "kill")
        for group in groups:
            assert _settled(cluster, group) == victim_id
        workers = [
            _start(lib, protocol, bootstrap, group, 20, tmp_path)
            for (lib, protocol), group in zip(plan, groups, strict=True)
        ]
        victim = next(n for n in cluster if n.node_id == victim_id)
        try:
            until(lambda: all(_committing(victim, w) for w in workers) or None, 60, "every client commits")
        except AssertionError:
            idle = [w for w in workers if not _committing(victim, w)]
            raise AssertionError(f"not committing: {[_describe(w, tmp_path) for w in idle]}") from None
        victim.kill()
        killed_at = time.time()
        for worker in workers:
            worker.finish(180)
        survivors = [n for n in cluster if n.alive()]
        for worker in workers:
            acked = worker.acked()
            after = [t for _, t in acked if t > killed_at]
            assert after, f"{worker.lib}/{worker.protocol}: no commit after the kill: {worker.events[-5:]}"
            resumed = after[0] - killed_at
            print(f"\nFAILOVER {worker.lib}/{worker.protocol}: kill -9 -> first acked commit {resumed:.3f} s")
            log.warning("failover %s/%s: %.3f s", worker.lib, worker.protocol, resumed)
            errors = sorted({e["error"][:90] for e in worker.events if "error" in e})
            print(f"  retried errors: {errors}")
            part = next(e["assigned"] for e in worker.events if "assigned" in e)[0]
            best = max(offset for offset, _ in acked)
            owner = until(
                lambda g=worker.group, p=part: _fetch_any(survivors, g, p), 20, "the new owner answers"
            )
            assert owner >= best, (worker.lib, worker.protocol, owner, best)


def _committing(owner: Node, worker: Worker) -> bool:
    """The worker's group has commits on its owner (one consumer per group: it holds partition 0)."""
    assert worker.proc.poll() is None, f"{worker.lib} exited early"
    error, offset = fetch_offset(owner.address, worker.group, "t", 0)
    return error == 0 and offset >= 3


def _describe(worker: Worker, log_dir: Path) -> str:
    err = (log_dir / f"{worker.lib}-{worker.protocol}-{worker.group}.err").read_text()
    return f"{worker.lib}/{worker.protocol} {worker.group}: stderr ends {err[-1500:]!r}"


def _fetch_any(cluster: list[Node], group: str, partition: int) -> int | None:
    for node in cluster:
        error, offset = fetch_offset(node.address, group, "t", partition)
        if error == 0:
            return offset
    return None
