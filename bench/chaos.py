"""A long, seeded chaos run of cluster mode (issue 35 item 8): three nodes under mixed load, one fault
after another, and after each one every acknowledged commit and record is checked (bench/chaos_verify.py).

The load, stock clients in their own processes for the whole run (their events in files under --dir):
* commits: a kafka-python classic group and a confluent-kafka consumer-protocol (KIP-848) group, each
  with a committing member (tests/cluster/commit_worker.py) and a member restarted now and then so the
  group rebalances (bench/chaos_member.py);
* idempotent produce, acks=all (bench/chaos_producer.py, confluent-kafka, with its `eos` debug log);
* transactional produce (bench/chaos_txn_worker.py, confluent-kafka) on a topic of its own; a fatal
  error ends that producer, as librdkafka requires, and a new one with the same transactional id
  takes over after the fault (`txn_worker_restarts` in each line).

The faults, drawn with `random.Random(seed)`, each followed by the cluster settling (every node answers,
every partition led) and the checks:
* `kill9`: SIGKILL a node, start it again on its port and data directory;
* `sigstop`: SIGSTOP a node for twice the lease TTL (its leases expire and move), then SIGCONT;
* `pg_restart`: PostgreSQL stopped in immediate mode (a crash) and started again;
* `cutoff`: a node's own proxy to PostgreSQL black-holes its traffic for twice the lease TTL, then
  heals with every connection reset;
* `rebalance`: the churning member of one group is killed and started again.

usage: python -m bench.chaos [--faults 1000] [--seed 7] [--ttl-ms 1500] [--dir DIR]
Prints one JSON line per fault and a summary; exits 1 if anything acknowledged was lost or duplicated.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.chaos_verify import (
    Ledger,
    Reader,
    RecordCheck,
    check_transactions,
    committed_offset,
    duplicated_batches,
    duplicates,
)
from bench.cluster_loads import agreed_leaders
from tests.cluster.nodes import Node, init_cluster, rpc, until
from tests.cluster.pg_proxy import BlackHoleProxy
from tests.kcoord_process import REPO
from tests.postgres import PgServer, start_postgres

TOPIC, TXN_TOPIC, PARTITIONS = "chaos", "chaos-txn", 6
FAULTS = ("kill9", "sigstop", "pg_restart", "cutoff", "rebalance")

FOREVER = str(10**6)  # the workers run until the harness stops them


class Cluster:
    """PostgreSQL, one proxy per node, three nodes, and the client processes."""

    def __init__(self, root: Path, pg: PgServer, dsn_db: str, ttl_ms: int) -> None:
        self.root, self.pg, self.ttl_ms, self.database = root, pg, ttl_ms, dsn_db
        self.proxies = {i: BlackHoleProxy(pg.port) for i in (1, 2, 3)}
        for proxy in self.proxies.values():
            proxy.start()
        self.nodes = {i: Node(root, i, self.proxies[i].dsn(dsn_db), ttl_ms) for i in (1, 2, 3)}
        self.workers: dict[str, tuple[list[str], subprocess.Popen[str]]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{n.address[0]}:{n.address[1]}" for n in self.nodes.values())

    def sql(self, statement: str) -> str:
        """One statement's rows through psql, unaligned (`|` between columns)."""
        where = ("-h", "127.0.0.1", "-p", str(self.pg.port), "-U", "postgres", "-d", self.database)
        return self.pg.as_postgres("psql", *where, "-At", "-c", statement).stdout

    def live(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.alive()]

    def spawn(self, name: str, argv: list[str]) -> None:
        out = (self.root / f"{name}.jsonl").open("a")
        err = (self.root / f"{name}.err").open("a")
        proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=REPO, stdout=out, stderr=err, text=True)
        self.workers[name] = (argv, proc)

    def respawn(self, name: str) -> None:
        argv, proc = self.workers[name]
        proc.kill()
        proc.wait(30)
        self.spawn(name, argv)

    def stop_workers(self) -> None:
        for _, proc in self.workers.values():
            proc.kill()
            proc.wait(30)

    def close(self) -> None:
        self.stop_workers()
        for node in self.nodes.values():
            node.kill()
        for proxy in self.proxies.values():
            proxy.close()


def _create_topics(node: Node) -> None:
    def three_brokers() -> bool | None:
        return (
            len(rpc(node.address, 3, 12, {"topics": [], "allow_auto_topic_creation": False})["brokers"]) == 3
            or None
        )

    until(three_brokers, 60, "all three nodes registered")  # a replication factor of 3 needs them
    for name in (TOPIC, TXN_TOPIC):
        topic = {"name": name, "num_partitions": PARTITIONS, "replication_factor": 3, "assignments": [],
                 "configs": []}  # fmt: skip
        answer = rpc(node.address, 19, 7, {"topics": [topic], "timeout_ms": 10000})["topics"][0]
        assert answer["error_code"] == 0, answer


def start_load(cluster: Cluster, ledger: Ledger) -> None:
    boot = cluster.bootstrap
    for lib, protocol in (("kafka-python", "classic"), ("confluent", "consumer")):
        group = f"chaos-{protocol}"
        cluster.spawn(group, ["tests.cluster.commit_worker", lib, protocol, boot, TOPIC, group, FOREVER])
        ledger.commit_files[group] = (cluster.root / f"{group}.jsonl", TOPIC)
        cluster.spawn(f"member-{protocol}", ["bench.chaos_member", boot, TOPIC, group, protocol, FOREVER])
    cluster.spawn("producer", ["bench.chaos_producer", boot, TOPIC, FOREVER])
    ledger.produce_files.append(cluster.root / "producer.jsonl")
    cluster.spawn("txn", _txn_worker(boot, 0))
    ledger.txn_files.append(cluster.root / "txn.jsonl")


def _txn_worker(boot: str, generation: int) -> list[str]:
    """The transactional worker's argv; each generation's values start 10**8 above the last's."""
    return ["bench.chaos_txn_worker", boot, TXN_TOPIC, "chaos-txn-1", FOREVER, str(generation * 10**8)]


def revive_txn_worker(cluster: Cluster, generation: int) -> bool:
    """Start the transactional worker again if a fatal error ended it (a fatal error ends a producer:
    an application creates a new one with the same transactional id, whose InitProducerId fences the
    old producer and completes or aborts its transaction). Its events go on in txn.jsonl."""
    _, proc = cluster.workers["txn"]
    if proc.poll() is None:
        return False
    cluster.spawn("txn", _txn_worker(cluster.bootstrap, generation))
    return True


def inject(kind: str, cluster: Cluster, rng: random.Random) -> str:
    """Apply one fault and undo it; what was done, for the log."""
    pause = 2 * cluster.ttl_ms / 1000
    node = cluster.nodes[rng.choice(sorted(cluster.nodes))]
    if kind == "kill9":
        node.kill()
        node.start(timeout=60)
        return node.name
    if kind == "sigstop":
        proc = node.proc
        assert proc is not None
        proc.send_signal(signal.SIGSTOP)
        time.sleep(pause)  # the fault itself is time: the lease must run out
        proc.send_signal(signal.SIGCONT)
        return node.name
    if kind == "pg_restart":
        cluster.pg.stop("immediate")
        cluster.pg.start()
        return "postgresql"
    if kind == "cutoff":
        proxy = cluster.proxies[node.node_id]
        proxy.cut()
        time.sleep(pause)  # the fault itself is time: cut off past the lease
        proxy.heal(reset=True)
        return node.name
    protocol = rng.choice(("classic", "consumer"))
    cluster.respawn(f"member-{protocol}")
    return f"member-{protocol}"


def settle(cluster: Cluster, timeout: float = 60) -> float:
    """Seconds until every node answers and agrees on a live leader for every partition."""
    started = time.monotonic()
    for node in cluster.nodes.values():
        if not node.alive():
            node.start(timeout=60)
    for topic in (TOPIC, TXN_TOPIC):
        agreed_leaders(list(cluster.nodes.values()), topic, PARTITIONS)
    return time.monotonic() - started


def verify(
    cluster: Cluster, ledger: Ledger, readers: tuple[Reader, Reader], records: RecordCheck
) -> dict[str, int]:
    live = cluster.live()
    lost_commits = 0
    last = ledger.last_commits()
    for (group, topic, partition), acked in last.items():
        if committed_offset(live, group, topic, partition) < acked:
            lost_commits += 1
    acked_records, new_acked = ledger.produced(), ledger.take_new_acked()
    committed, aborted, unknown = ledger.transactions()
    plain, transactional = readers
    read = plain.read_to_end()
    lost, duplicated = records.update(acked_records, new_acked, read, plain.take_changes())
    if duplicated:  # where, for the investigation (the producer's events and eos log are beside it)
        where = duplicates(read)
        found = {"where": where, "batches": duplicated_batches(cluster.sql, TOPIC, where)}
        (cluster.root / "duplicates.json").write_text(json.dumps(found, indent=1))
    missing, leaked, twice = _transactions_read(transactional, committed, aborted, unknown)
    return {
        "commits_acked": ledger.acked_commits(), "groups_checked": len(last), "lost_commits": lost_commits,
        "records_checked": len(acked_records), "lost_records": lost, "duplicated_records": duplicated,
        "txns_values_checked": len(committed), "txn_missing": missing, "txn_aborted_read": leaked,
        "txn_read_twice": twice,
    }  # fmt: skip


def _transactions_read(
    reader: Reader, committed: set[str], aborted: set[str], unknown: set[str], timeout: float = 30
) -> tuple[int, int, int]:
    """check_transactions, read again (bounded) while committed values are missing: commit_transaction
    returns once the coordinator has written PREPARE_COMMIT, and the markers that let read_committed
    readers past the transaction follow (Kafka's TransactionMarkerChannelManager, as here)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check_transactions(committed, aborted, unknown, reader.read_to_end())
        if found[0] == 0 or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


BAD = (
    "lost_commits",
    "lost_records",
    "duplicated_records",
    "txn_missing",
    "txn_aborted_read",
    "txn_read_twice",
)


@contextmanager
def running(root: Path, ttl_ms: int) -> Iterator[Cluster]:
    with ExitStack() as stack:
        pg = start_postgres()
        stack.callback(pg.remove)
        database = "chaos"
        pg.as_postgres("createdb", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", database)
        init_cluster(pg.dsn(database))
        cluster = Cluster(root, pg, database, ttl_ms)
        stack.callback(cluster.close)
        for node in cluster.nodes.values():
            node.start(timeout=60)
        yield cluster


def run(
    faults: int,
    seed: int,
    ttl_ms: int,
    root: Path,
    emit: Callable[[dict[str, Any]], None],
    max_minutes: float | None = None,
    kinds: tuple[str, ...] = FAULTS,
) -> dict[str, Any]:
    rng = random.Random(seed)
    stop_at = None if max_minutes is None else time.monotonic() + 60 * max_minutes
    ledger = Ledger()
    totals: Counter[str] = Counter()
    with running(root, ttl_ms) as cluster:
        _create_topics(cluster.nodes[1])
        settle(cluster)
        start_load(cluster, ledger)
        boot = cluster.bootstrap.split(",")
        readers = (Reader(boot, TOPIC, PARTITIONS, False), Reader(boot, TXN_TOPIC, PARTITIONS, True))
        records = RecordCheck()
        try:
            time.sleep(5)  # the clients join and start acknowledging before the first fault
            for number in range(1, faults + 1):
                if stop_at is not None and time.monotonic() > stop_at:
                    break
                kind = rng.choice(kinds)
                target = inject(kind, cluster, rng)
                settled = settle(cluster)
                checked = verify(cluster, ledger, readers, records)
                if revive_txn_worker(cluster, totals["txn_worker_restarts"] + 1):
                    totals["txn_worker_restarts"] += 1
                checked["txn_worker_restarts"] = totals["txn_worker_restarts"]
                totals[kind] += 1
                for key in BAD:  # each check covers everything acknowledged so far: the worst one
                    totals[key] = max(totals[key], checked[key])
                emit(
                    {"fault": number, "kind": kind, "target": target, "settle_s": round(settled, 2)} | checked
                )
            cluster.stop_workers()  # then one last check of everything they were acknowledged
            final = verify(cluster, ledger, readers, records)
        finally:
            cluster.stop_workers()
            for reader in readers:
                reader.close()
    for key in BAD:
        totals[key] = max(totals[key], final[key])
    by_kind = {k: totals[k] for k in FAULTS}
    return {"faults": sum(by_kind.values()), "seed": seed, "ttl_ms": ttl_ms, "by_kind": by_kind,
            **{k: totals[k] for k in BAD}, "txn_worker_restarts": totals["txn_worker_restarts"],
            "last_check": final,
            "client_errors": ledger.count_errors()}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--faults", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--ttl-ms", type=int, default=1500)
    parser.add_argument("--only", choices=FAULTS, action="append", help="draw only these faults")
    parser.add_argument("--max-minutes", type=float, default=None, help="stop injecting after this long")
    parser.add_argument("--dir", type=Path, default=None, help="logs and events (default: a temp dir)")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="kcoord-chaos-"))
    root.mkdir(parents=True, exist_ok=True)

    def emit(line: dict[str, Any]) -> None:
        print(json.dumps(line), flush=True)

    summary = run(
        args.faults, args.seed, args.ttl_ms, root, emit, args.max_minutes, tuple(args.only or FAULTS)
    )
    emit({"summary": summary, "dir": str(root)})
    return 1 if any(summary[k] for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
