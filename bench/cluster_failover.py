"""Failover of bench.cluster (issue 27): the time from a fault on a node (kill -9, or SIGTERM: the
graceful handover) to the first successful commit of a group it owned and the first successful
produce to a partition it led, each on a surviving node.

Two probes run in threads from the moment the signal is sent, each as a client does: ask a survivor
who coordinates the group (FindCoordinator) or leads the partition (Metadata), and send the request
there only when the answer is a survivor (a write the victim takes while it drains is not a
failover). OffsetCommit v2 (a simple group) and Produce v8 with acks=-1 (answered once committed in
PostgreSQL). Afterwards the victim is started again on the same port and the bench waits until it
owns its groups and leads its partitions again, so the next phase starts from a settled cluster.

With `fill_mib` (bench.cluster --failover-mib 1024, issue 35 item 2) a third kill -9 follows, of a
leader whose partition first received that many MiB (Produce v8 of 512 KiB batches, acks=-1, four
connections): the time to the first produce on its successor is then bounded by the lease TTL and
the new leader's bounded load (the bytes of a tail, partition_batches.TAIL_BYTES), not by the data.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from bench.cluster_loads import agreed_leaders, metadata_leaders, owners
from tests.cluster.nodes import Node, commit, owner_of, rpc, until

FAILOVER_TOPIC = "bench-failover"
FAILOVER_PARTITIONS = 12  # enough that every node leads at least one (rendezvous over three)


def _batch(value: bytes) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, int(time.time() * 1000), b"k", value, [])
    return bytes(builder.build())


def produce_error(node: Node, partition: int) -> int:
    """One record to `partition` of the failover topic through `node` (Produce v8, acks=-1)."""
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": FAILOVER_TOPIC,
                        "partition_data": [{"index": partition, "records": _batch(b"probe")}]}],
    }  # fmt: skip
    try:
        answer = rpc(node.address, 0, 8, body)
    except OSError:
        return -1
    return int(answer["responses"][0]["partition_responses"][0]["error_code"])


def fill(node: Node, partition: int, fill_bytes: int, connections: int = 4) -> int:
    """Produce `fill_bytes` to `partition` through its leader `node`; the bytes acknowledged."""
    record = _batch(os.urandom(512 << 10))  # no producer id: the same batch may be sent again
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": FAILOVER_TOPIC,
                        "partition_data": [{"index": partition, "records": record}]}],
    }  # fmt: skip
    each = -(-fill_bytes // len(record) // connections)

    def send() -> int:
        done = 0
        for _ in range(each):
            answer = rpc(node.address, 0, 8, body)
            if int(answer["responses"][0]["partition_responses"][0]["error_code"]) == 0:
                done += len(record)
        return done

    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        return sum(pool.map(lambda _: send(), range(connections)))


def _commit_probe(survivors: Sequence[Node], group: str) -> Callable[[], bool]:
    by_id = {n.node_id: n for n in survivors}

    def attempt() -> bool:
        for asker in survivors:
            owner = by_id.get(owner_of(asker, group) or -1)
            if owner is not None:
                return commit(owner.address, group, FAILOVER_TOPIC, int(time.time())) == 0
        return False

    return attempt


def _produce_probe(survivors: Sequence[Node], partition: int) -> Callable[[], bool]:
    by_id = {n.node_id: n for n in survivors}

    def attempt() -> bool:
        for asker in survivors:
            # this partition's leader alone: the victim's other partitions may move a little later
            leader = by_id.get(metadata_leaders(asker, FAILOVER_TOPIC).get(partition, -1))
            if leader is not None:
                return produce_error(leader, partition) == 0
        return False

    return attempt


def _first_success(attempt: Callable[[], bool], since: float, timeout: float) -> float:
    """Seconds from `since` to the first attempt that succeeded (NaN: not within `timeout`)."""
    while time.monotonic() < since + timeout:
        if attempt():
            return time.monotonic() - since
        time.sleep(0.01)
    return float("nan")


def _victims_own(cluster: Sequence[Node], victim: Node, group: str, partition: int) -> None:
    """Wait until every node names `victim` as the group's coordinator and the partition's leader,
    and both answer a write on it."""
    until(lambda: all(owner_of(n, group) == victim.node_id for n in cluster) or None, 60,
          f"{victim.name} owns {group}", step=0.1)  # fmt: skip
    until(lambda: agreed_leaders(cluster, FAILOVER_TOPIC, FAILOVER_PARTITIONS)[partition] == victim.node_id
          or None, 60, f"{victim.name} leads {partition}", step=0.1)  # fmt: skip
    until(lambda: commit(victim.address, group, FAILOVER_TOPIC, 1) == 0 or None, 30, "a commit on the victim")
    until(lambda: produce_error(victim, partition) == 0 or None, 30, "a produce on the victim")


def failover(
    cluster: Sequence[Node], victim: Node, sig: int, timeout: float, fill_bytes: int = 0
) -> dict[str, Any]:
    """Signal `victim` (owner of a group, leader of a partition, holding `fill_bytes` more in that
    partition); the two probes' times."""
    groups = [f"failover-{i}" for i in range(200)]
    group = next(g for g, owner in owners(cluster, groups).items() if owner is victim)
    led = agreed_leaders(cluster, FAILOVER_TOPIC, FAILOVER_PARTITIONS)
    partition = min(p for p, leader in led.items() if leader == victim.node_id)
    _victims_own(cluster, victim, group, partition)
    filled = fill(victim, partition, fill_bytes) if fill_bytes else 0
    survivors = [n for n in cluster if n is not victim]
    assert victim.proc is not None
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        since = time.monotonic()
        victim.proc.send_signal(sig)
        commit_s = pool.submit(_first_success, _commit_probe(survivors, group), since, timeout)
        produce_s = pool.submit(_first_success, _produce_probe(survivors, partition), since, timeout)
        try:
            victim.proc.wait(timeout)  # no second signal: SIGTERM's handover runs to its end
        except subprocess.TimeoutExpired:
            victim.kill()
        exited_s = time.monotonic() - since
        result = {"commit_s": commit_s.result(), "produce_s": produce_s.result(), "exit_s": exited_s,
                  "partition_mib": filled / (1 << 20)}  # fmt: skip
    victim.start(60)
    owners(cluster, groups)  # the victim's groups are back on it
    _victims_own(cluster, victim, group, partition)
    return result


def failovers(cluster: Sequence[Node], ttl_ms: int, fill_mib: int = 0) -> dict[str, Any]:
    """kill -9 of one node, then SIGTERM to another, each back before the next; with `fill_mib`, a
    kill -9 of the third after its partition received that many MiB."""
    timeout = ttl_ms / 1000 * 3 + 30
    out = {
        "kill_9": failover(cluster, cluster[0], signal.SIGKILL, timeout),
        "sigterm": failover(cluster, cluster[1], signal.SIGTERM, timeout),
    }
    if fill_mib:
        out["kill_9_filled"] = failover(cluster, cluster[2], signal.SIGKILL, timeout, fill_mib << 20)
    return out
