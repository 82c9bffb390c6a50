"""Leader epochs in cluster mode are the partition's lease epochs (issue 33 item 6, issue 35 item 3), over
real node processes: every batch carries its leader's lease epoch, Metadata reports it, a new leader
after a kill -9 or a handover reports a higher one, Fetch / ListOffsets / OffsetForLeaderEpoch fence a
client's old epoch (FENCED_LEADER_EPOCH) and refuse one not yet known (UNKNOWN_LEADER_EPOCH), and
OffsetForLeaderEpoch answers the end of an earlier leader's epoch from the history the new leader
rebuilt from the stored batches, so a consumer's KIP-320 check finds exactly what a Kafka cluster
would: no truncation, since no acknowledged record is ever lost. A node that does not lead the
partition answers NOT_LEADER_OR_FOLLOWER, as for Fetch, so the client goes to the leader Metadata
names. And a stock consumer (confluent-kafka in a subprocess, committing every record) reads across a
kill -9 of its partitions' leader with nothing lost and nothing read twice before its committed
position: librdkafka validates its position with OffsetForLeaderEpoch after the change (a wrong end
offset makes it see truncation and reset, which this test catches)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.record_batch import read_header
from tests.cluster.nodes import Node, init_cluster, nodes, rpc, until
from tests.cluster.test_partition_nodes import PARTITIONS, TOPIC, agreed_leaders
from tests.kcoord_process import REPO
from tests.server.test_dataplane_wire import batch
from tests.server.wire import connect, create_topic

NOT_LEADER_OR_FOLLOWER = ErrorCode.NOT_LEADER_OR_FOLLOWER
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH
TTL_MS = 1500


def _produce(node: Node, partition: int, count: int) -> dict[str, Any]:
    body = {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch(count)}]}],
    }  # fmt: skip
    return rpc(node.address, 0, 12, body)["responses"][0]["partition_responses"][0]  # type: ignore[no-any-return]


def _end_of_epoch(node: Node, partition: int, epoch: int, current: int = -1) -> tuple[int, int, int]:
    body = {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch},
    ]}]}  # fmt: skip
    answer = rpc(node.address, 23, 4, body)["topics"][0]["partitions"][0]
    return int(answer["error_code"]), int(answer["leader_epoch"]), int(answer["end_offset"])


def _metadata_epoch(node: Node, partition: int) -> tuple[int, int]:
    """(leader id, leader epoch) of the partition in `node`'s Metadata v9."""
    body = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}  # fmt: skip
    parts = rpc(node.address, 3, 9, body)["topics"][0]["partitions"]
    entry = next(p for p in parts if int(p["partition_index"]) == partition)
    return int(entry["leader_id"]), int(entry["leader_epoch"])


def _fetch(node: Node, partition: int, offset: int, current: int) -> dict[str, Any]:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": TOPIC, "partitions": [{"partition": partition, "current_leader_epoch": current,
                                                    "fetch_offset": offset, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    return rpc(node.address, 1, 11, body)["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def _list_offsets(node: Node, partition: int, timestamp: int, current: int) -> dict[str, Any]:
    body = {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": partition, "current_leader_epoch": current, "timestamp": timestamp},
        ]}],
    }  # fmt: skip
    return rpc(node.address, 2, 7, body)["topics"][0]["partitions"][0]  # type: ignore[no-any-return]


def _batch_epochs(records: bytes) -> list[tuple[int, int]]:
    """(base offset, partitionLeaderEpoch) of every batch in a fetched record set."""
    found, pos = [], 0
    while pos < len(records):
        header = read_header(records, pos)
        found.append((header.base_offset, header.partition_leader_epoch))
        pos += header.size
    return found


def _led_partition(cluster: list[Node]) -> tuple[Node, Node, int]:
    led = agreed_leaders(cluster)
    leader = next(n for n in cluster if n.node_id in led.values())
    other = next(n for n in cluster if n is not leader)
    return leader, other, next(p for p, node_id in led.items() if node_id == leader.node_id)


def test_a_new_leader_after_kill_9_has_a_higher_epoch_and_fences_the_old_one(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        leader, other, partition = _led_partition(cluster)
        old_id, old = _metadata_epoch(leader, partition)
        assert old_id == leader.node_id and old >= 1  # the lease's first acquire is epoch 1
        until(lambda: _metadata_epoch(other, partition) == (leader.node_id, old) or None, 15, "agreed epoch")
        assert _produce(leader, partition, 3)["error_code"] == 0
        first = _fetch(leader, partition, 0, old)
        assert first["error_code"] == 0 and _batch_epochs(first["records"]) == [(0, old)]
        assert _fetch(leader, partition, 0, old + 1)["error_code"] == UNKNOWN_LEADER_EPOCH
        assert _end_of_epoch(other, partition, old)[0] == NOT_LEADER_OR_FOLLOWER

        leader.kill()  # kill -9: the survivor takes the partition once the lease runs out
        until(lambda: _produce(other, partition, 2)["error_code"] == 0 or None, 30, "the survivor leads")
        new_id, new = _metadata_epoch(other, partition)
        assert new_id == other.node_id and new > old
        # the client that read under the old leader: fenced, so it refreshes its metadata
        assert _fetch(other, partition, 3, old)["error_code"] == FENCED_LEADER_EPOCH
        assert _fetch(other, partition, 3, new + 1)["error_code"] == UNKNOWN_LEADER_EPOCH
        later = _fetch(other, partition, 0, new)
        assert later["error_code"] == 0 and _batch_epochs(later["records"]) == [(0, old), (3, new)]
        assert _fetch(other, partition, 0, -1)["error_code"] == 0  # no epoch stated: no check
        # KIP-320: the end of the epoch the client last read is its position: nothing was truncated
        assert _end_of_epoch(other, partition, old) == (0, old, 3)
        assert _end_of_epoch(other, partition, new) == (0, new, 5)
        assert _end_of_epoch(other, partition, new + 1) == (0, -1, -1)
        assert _end_of_epoch(other, partition, old, current=old)[0] == FENCED_LEADER_EPOCH
        assert _end_of_epoch(other, partition, old, current=new) == (0, old, 3)
        # ListOffsets: the same check; the answer's epoch is the leader's (latest) or the offset's writer
        assert _list_offsets(other, partition, -1, old)["error_code"] == FENCED_LEADER_EPOCH
        latest = _list_offsets(other, partition, -1, new)
        assert (latest["error_code"], latest["offset"], latest["leader_epoch"]) == (0, 5, new)
        earliest = _list_offsets(other, partition, -2, -1)
        assert (earliest["error_code"], earliest["offset"], earliest["leader_epoch"]) == (0, 0, old)


def test_a_handover_starts_a_new_epoch_and_the_old_one_ends_where_it_stopped(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], 10_000) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        leader, other, partition = _led_partition(cluster)
        old = _metadata_epoch(leader, partition)[1]
        assert _produce(leader, partition, 3)["error_code"] == 0
        assert _end_of_epoch(leader, partition, old) == (0, old, 3)
        assert leader.stop(signal.SIGTERM) == 0  # hands its leases over at once
        until(lambda: _produce(other, partition, 2)["error_code"] == 0 or None, 15, "the survivor leads")
        new = _metadata_epoch(other, partition)[1]
        assert new > old
        # a consumer at offset 3 after reading the old epoch's batches: its end is not below it
        assert _end_of_epoch(other, partition, old) == (0, old, 3)
        assert _end_of_epoch(other, partition, new) == (0, new, 5)
        assert _end_of_epoch(other, partition, new + 1) == (0, -1, -1)  # no later epoch exists


def _produce_wave(cluster: list[Node], partition: int, first: int) -> None:
    """Two records to the partition's leader (whichever live node takes them), values `first`, `first+1`."""

    def sent() -> bool | None:
        for node in (n for n in cluster if n.alive()):
            body = {
                "transactional_id": None, "acks": -1, "timeout_ms": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [
                    {"index": partition, "records": batch(2, first=first)}]}],
            }  # fmt: skip
            try:
                answer = rpc(node.address, 0, 12, body)["responses"][0]["partition_responses"][0]
            except OSError:
                continue
            if answer["error_code"] == 0:
                return True
        return None

    until(sent, 30, f"partition {partition} takes a produce")


def _consumer_events(path: Path) -> list[dict[str, Any]]:
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_a_stock_consumer_keeps_consuming_across_a_leader_change(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2], TTL_MS) as cluster:
        with connect(cluster[0].address) as sock:
            assert create_topic(sock, TOPIC, PARTITIONS)["error_code"] == 0
        led = agreed_leaders(cluster)
        victim = next(n for n in cluster if n.node_id in led.values())
        moved = {p for p, node_id in led.items() if node_id == victim.node_id}
        epochs_before = {p: _metadata_epoch(victim, p)[1] for p in moved}
        for p in range(PARTITIONS):
            _produce_wave(cluster, p, 0)
        out = tmp_path / "consumer.out"
        bootstrap = ",".join(f"{n.address[0]}:{n.address[1]}" for n in cluster)
        argv = [sys.executable, "-m", "tests.cluster.epoch_consumer_worker", bootstrap, TOPIC, "g-epochs",
                str(4 * PARTITIONS), "120"]  # fmt: skip
        with out.open("w") as stdout, (tmp_path / "consumer.err").open("w") as stderr:
            worker = subprocess.Popen(argv, cwd=REPO, stdout=stdout, stderr=stderr, text=True)
        try:
            until(
                lambda: (
                    len({(e["p"], e["o"]) for e in _consumer_events(out) if "o" in e}) >= 2 * PARTITIONS
                    or None
                ),
                60,
                "the consumer read the first wave",
                step=0.1,
            )
            victim.kill()  # kill -9 of the moved partitions' leader
            for p in range(PARTITIONS):
                _produce_wave(cluster, p, 2)
            assert worker.wait(timeout=150) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        events = _consumer_events(out)
        assert events and events[-1] == {"done": 4 * PARTITIONS}, events[-5:]
        read = [e for e in events if "o" in e]
        first_read: dict[tuple[int, int], dict[str, Any]] = {}
        for event in read:
            key = (event["p"], event["o"])
            if key in first_read:  # read again: only from the committed position on (a rejoin)
                assert event["o"] >= event["c"], f"a record before the committed position read twice: {event}"
                assert event["v"] == first_read[key]["v"]
            first_read.setdefault(key, event)
        assert set(first_read) == {(p, o) for p in range(PARTITIONS) for o in range(4)}
        for (p, o), event in first_read.items():
            assert event["v"].startswith(f"{o}:"), event  # nothing lost, nothing out of place
            if p in moved:  # the client saw the new leader's higher epoch on its records
                assert (event["e"] == epochs_before[p]) if o < 2 else (event["e"] > epochs_before[p]), event
