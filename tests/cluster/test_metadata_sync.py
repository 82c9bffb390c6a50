"""One cluster that reads like one broker (kcoord/cluster/metadata_sync.py): a metadata change node 1
has answered is what nodes 2 and 3 answer with their very first request after it (no polling here),
a new topic's partitions have leaders on every node when CreateTopics answers, a stock producer
bootstrapped from another node delivers to it at once, and a killed node holds an answer back no longer
than its lease."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.protocol.errors import ErrorCode
from tests.cluster.nodes import Node, init_cluster, nodes, rpc
from tests.kcoord_process import REPO
from tests.server.order_wire import (
    ALLOW,
    LITERAL,
    READ,
    TOPIC_RESOURCE,
    acl_filter,
    describe_configs,
    metadata,
    retention_ms,
)

pytestmark = pytest.mark.timeout(300)

SUPER = ("--authorizer", "standard", "--super-users", "User:ANONYMOUS")  # every API allowed, ACLs kept


def _create(node: Node, name: str, partitions: int) -> dict[str, Any]:
    topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
             "configs": []}  # fmt: skip
    return rpc(node.address, 19, 7, {"topics": [topic], "timeout_ms": 5000})["topics"][0]  # type: ignore[no-any-return]


def _leaders(node: Node, name: str) -> tuple[int, dict[int, int]]:
    """(topic error code, partition -> leader id) in `node`'s Metadata, its first answer."""
    (found,) = rpc(node.address, *metadata(name))["topics"]
    return found["error_code"], {p["partition_index"]: p["leader_id"] for p in found["partitions"]}


def _produce(node: Node, name: str, partition: int) -> int:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    builder.append(0, int(time.time() * 1000), b"k", b"v", [])
    data = [{"name": name, "partition_data": [{"index": partition, "records": bytes(builder.build())}]}]
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": data}
    return int(rpc(node.address, 0, 8, body)["responses"][0]["partition_responses"][0]["error_code"])


def _assert_led_everywhere(cluster: list[Node], name: str, partitions: int) -> None:
    """Every node's first Metadata names the same live leader for every partition, and each leader
    takes a produce at the first attempt."""
    seen = [_leaders(node, name) for node in cluster]
    error, leaders = seen[0]
    assert error == ErrorCode.NONE and sorted(leaders) == list(range(partitions)), seen
    assert all(other == seen[0] for other in seen[1:]), seen
    assert set(leaders.values()) <= {n.node_id for n in cluster}, leaders
    by_id = {n.node_id: n for n in cluster}
    assert [_produce(by_id[leader], name, p) for p, leader in sorted(leaders.items())] == [0] * partitions


def test_every_metadata_change_on_node_1_is_answered_by_nodes_2_and_3_at_once(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], 3000, *SUPER) as cluster:
        first, others = cluster[0], cluster[1:]
        name = "sync-topic"
        assert _create(first, name, 6)["error_code"] == ErrorCode.NONE
        _assert_led_everywhere(cluster[::-1], name, 6)  # nodes 3 and 2 asked first

        grow = {"name": name, "count": 9, "assignments": None}
        grown = rpc(first.address, 37, 3, {"topics": [grow], "timeout_ms": 5000, "validate_only": False})
        assert grown["results"][0]["error_code"] == ErrorCode.NONE
        _assert_led_everywhere(cluster[::-1], name, 9)

        config = {"resource_type": TOPIC_RESOURCE, "resource_name": name,
                  "configs": [{"name": "retention.ms", "value": "1234"}]}  # fmt: skip
        altered = rpc(first.address, 33, 2, {"resources": [config], "validate_only": False})
        assert altered["responses"][0]["error_code"] == ErrorCode.NONE
        assert [retention_ms(rpc(n.address, *describe_configs(name))) for n in others] == ["1234"] * 2
        config["configs"] = [{"name": "retention.ms", "config_operation": 0, "value": "5678"}]  # SET
        altered = rpc(first.address, 44, 1, {"resources": [config], "validate_only": False})
        assert altered["responses"][0]["error_code"] == ErrorCode.NONE
        assert [retention_ms(rpc(n.address, *describe_configs(name))) for n in others] == ["5678"] * 2

        binding = {
            "resource_type": TOPIC_RESOURCE, "resource_name": name, "resource_pattern_type": LITERAL,
            "principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW,
        }  # fmt: skip
        assert rpc(first.address, 30, 3, {"creations": [binding]})["results"][0]["error_code"] == 0
        for node in others:
            (resource,) = rpc(node.address, 29, 3, acl_filter(name))["resources"]
            assert [(a["principal"], a["operation"]) for a in resource["acls"]] == [("User:alice", READ)]
        deleted_acls = rpc(first.address, 31, 3, {"filters": [acl_filter(name)]})
        assert len(deleted_acls["filter_results"][0]["matching_acls"]) == 1
        assert [rpc(n.address, 29, 3, acl_filter(name))["resources"] for n in others] == [[], []]

        upsert = {"name": "alice", "mechanism": 2, "iterations": 4096, "salt": b"s" * 16,
                  "salted_password": b"p" * 64}  # fmt: skip
        altered = rpc(first.address, 51, 0, {"deletions": [], "upsertions": [upsert]})
        assert altered["results"][0]["error_code"] == ErrorCode.NONE
        for node in others:
            (result,) = rpc(node.address, 50, 0, {"users": [{"name": "alice"}]})["results"]
            assert [(c["mechanism"], c["iterations"]) for c in result["credential_infos"]] == [(2, 4096)]

        gone = {"name": name, "topic_id": uuid.UUID(int=0)}
        deleted = rpc(first.address, 20, 6, {"topics": [gone], "timeout_ms": 5000})
        assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
        assert [_leaders(n, name) for n in others] == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {})] * 2
        assert _create(cluster[1], name, 3)["error_code"] == ErrorCode.NONE  # the name again, on node 2
        _assert_led_everywhere([cluster[2], first, cluster[1]], name, 3)


# librdkafka logs each partition's leader as it reads Metadata ("Topic fresh [0] Leader 2 Epoch 1",
# debug=metadata): a partition it saw without a leader ("Leader -1") would have waited for a later
# Metadata (it retries, so the record still gets there, late). The producer connects first ("ready"),
# and is told to produce (a line on stdin) once CreateTopics has answered.
_PRODUCER = """
import sys
from confluent_kafka import Producer
bootstrap, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 10000,
                     "debug": "metadata"})
producer.list_topics(timeout=10)
print("ready", flush=True)
sys.stdin.readline()
errors = []
for p in range(partitions):
    producer.produce(topic, b"v", partition=p, on_delivery=lambda err, msg: errors.append(err))
left = producer.flush(30)
print("left", left, "errors", [str(e) for e in errors if e is not None], flush=True)
sys.exit(0 if left == 0 and len(errors) == partitions and not any(errors) else 1)
"""


def test_a_stock_producer_bootstrapped_from_node_3_delivers_at_once_to_a_topic_node_1_created(
    tmp_path: Path, cluster_dsn: str
) -> None:
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], 3000) as cluster:
        stderr = (tmp_path / "producer.err").open("w")
        producer = subprocess.Popen(
            [sys.executable, "-c", _PRODUCER, cluster[2].bootstrap, "fresh", "6"],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
        try:
            assert producer.stdout is not None and producer.stdin is not None
            assert producer.stdout.readline().strip() == "ready"
            assert _create(cluster[0], "fresh", 6)["error_code"] == ErrorCode.NONE
            producer.stdin.write("go\n")
            producer.stdin.flush()
            out = producer.stdout.read()
            code = producer.wait(timeout=60)
            log = (tmp_path / "producer.err").read_text()
            assert code == 0, out + log
        finally:
            producer.kill()
            stderr.close()
        assert "Topic fresh [5] Leader" in log, log  # what the producer read is in its log
        assert not re.search(r"Topic fresh \[\d+\] Leader -1", log), log


def test_a_killed_node_holds_a_create_topics_back_no_longer_than_its_lease(
    tmp_path: Path, cluster_dsn: str
) -> None:
    ttl_ms = 2000
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, [1, 2, 3], ttl_ms) as cluster:
        assert _create(cluster[0], "before", 1)["error_code"] == ErrorCode.NONE
        cluster[2].kill()
        started = time.monotonic()
        assert _create(cluster[0], "after", 4)["error_code"] == ErrorCode.NONE
        waited = time.monotonic() - started
        # the dead node's row expires within the TTL; the bound is TTL + two polls (1 s), and a
        # second more for a loaded machine
        assert waited < ttl_ms / 1000 + 2.0, waited
        _assert_led_everywhere(cluster[:2], "after", 4)
