"""What the clients' own suites found on three nodes and not on one (bench/client_suites.py, issue 35
item 7), each with a stock client in a process of its own (this module run as a script):

* kafka-python's test_transactional_producer_offsets: AddOffsetsToTxn named `__consumer_offsets`
  partition `(hash & 0x7fffffff) % 50` where the group's shard is `Utils.abs(hash) % 50`; for a group
  whose Java hash is negative the two differ, the transaction coordinator sent the group's COMMIT marker
  to the owner of the wrong shard, and the transactional offsets never became committed.
* kafka-python's test_describe_log_dirs: a cluster node had no log directory, so DescribeLogDirs
  answered KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoord.cluster.ownership import preferred_owner
from kcoord.coordinator.runtime.shards import DEFAULT_NUM_SHARDS, java_string_hash, shard_of
from kcoord.coordinator.transactions import offsets_partition_for
from kcoord.coordinator.transactions.partitioning import OFFSETS_TOPIC
from tests.cluster.nodes import Node, fetch_offset, init_cluster, nodes, owner_of, rpc, until
from tests.kcoord_process import REPO

pytestmark = pytest.mark.timeout(300)

IDS = [1, 2, 3]
TOPIC = "suites-txn"


def _wrong_partition(key: str) -> int:
    """The partition the old AddOffsetsToTxn named (`Utils.toPositive`, not `Utils.abs`)."""
    return (java_string_hash(key) & 0x7FFFFFFF) % DEFAULT_NUM_SHARDS


def _group_with_a_negative_hash() -> tuple[str, str]:
    """A group whose shard and old (wrong) partition prefer different nodes, and a key of that partition."""
    for i in range(10_000):
        group = f"suites-group-{i}"
        right, wrong = shard_of(group), _wrong_partition(group)
        if java_string_hash(group) < 0 and preferred_owner(right, IDS) != preferred_owner(wrong, IDS):
            other = next(f"k{j}" for j in range(100_000) if shard_of(f"k{j}") == wrong)
            return group, other
    raise AssertionError("no group id with a negative hash in 10,000")


def _settled(cluster: list[Node], key: str) -> int | None:
    """The key's owner once every node names its preferred owner (joins drained), else None."""
    preferred = preferred_owner(shard_of(key), IDS)
    return preferred if all(owner_of(node, key) == preferred for node in cluster) else None


def _create_topic(node: Node) -> None:
    topic = {"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    answer = rpc(node.address, 19, 7, {"topics": [topic], "timeout_ms": 5000})["topics"][0]
    assert answer["error_code"] == 0, answer


def _client(tmp_path: Path, *argv: str) -> str:
    """This module as a stock client's process: its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.cluster.test_suites_clients", *argv],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    (tmp_path / f"{argv[0]}.err").write_text(done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_add_offsets_to_txn_names_the_groups_shard_for_every_hash() -> None:
    group, _ = _group_with_a_negative_hash()
    for key in (group, "txn-test-group", "my-group", "polygenelubricants"):  # the last hashes to MIN_VALUE
        assert offsets_partition_for(key) == (OFFSETS_TOPIC, shard_of(key)), key


def test_transactional_offsets_of_a_group_with_a_negative_hash_commit_on_three_nodes(
    tmp_path: Path, cluster_dsn: str
) -> None:
    group, other_key = _group_with_a_negative_hash()
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, IDS, 3000) as cluster:
        owner = until(lambda: _settled(cluster, group), 30, f"{group}'s shard settled on its preferred node")
        until(lambda: _settled(cluster, other_key), 30, "the old partition's shard settled")
        _create_topic(cluster[0])
        _client(tmp_path, "txn", cluster[0].bootstrap, group, TOPIC)
        # EndTxn answers before the markers are written (TransactionCoordinator.endTransaction), so the
        # offset is awaited; before the fix it was never committed
        address = next(node.address for node in cluster if node.node_id == owner)
        until(lambda: fetch_offset(address, group, TOPIC) == (0, 7) or None, 15,
              f"{group}'s transactional offset committed on its owner, node {owner}")  # fmt: skip


def test_describe_log_dirs_answers_every_node_without_error(tmp_path: Path, cluster_dsn: str) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, IDS, 3000) as cluster:
        answers = json.loads(_client(tmp_path, "log_dirs", cluster[0].bootstrap))
        assert sorted(answers) == [str(i) for i in IDS], answers  # one answer per broker
        for node_id, log_dirs in answers.items():
            assert log_dirs, f"node {node_id} reported no log directory"
            assert all(d["error_code"] == 0 for d in log_dirs), (node_id, log_dirs)


# -- the stock client (kafka-python), run as this module -----------------------------------------------


def _txn(bootstrap: str, group: str, topic: str) -> None:
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-txn")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, partition=0, value=b"v").get(timeout=30)
        offsets = {TopicPartition(topic, 0): OffsetAndMetadata(7, "m", -1)}
        producer.send_offsets_to_transaction(offsets, group)
        producer.commit_transaction()
    finally:
        producer.close(timeout=10)


def _log_dirs(bootstrap: str) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found: dict[str, Any] = {str(r["broker"]): r["log_dirs"] for r in admin.describe_log_dirs()}
    finally:
        admin.close()
    print(json.dumps({b: [{"error_code": d["error_code"]} for d in dirs] for b, dirs in found.items()}))


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["txn", bootstrap, group, topic]:
            _txn(bootstrap, group, topic)
        case ["log_dirs", bootstrap]:
            _log_dirs(bootstrap)
        case _:
            raise SystemExit(f"usage: {sys.argv[0]} txn BOOTSTRAP GROUP TOPIC | log_dirs BOOTSTRAP")
