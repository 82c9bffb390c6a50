"""Node-to-node calls on an inter-broker listener with the node's own SASL login (issue 35 item 4).

Three nodes whose only listeners are SASL (a client one and an INTERNAL one named by
`--inter-broker-listener-name`), the authorizer on; the node principal `User:node` holds only
CLUSTER_ACTION on the cluster, as Kafka's brokers need. A stock transactional producer (confluent-kafka,
a subprocess) writes one transaction over six partitions led by several nodes and commits: the partition
leaders verify it with the transaction's coordinator (AddPartitionsToTxn v4/v5) and the coordinator's
markers reach every leader (WriteTxnMarkers), both node to node; a read_committed consumer then reads
every record, which it could not without the markers. Also: the settings that cannot work are refused
before the node starts, in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kcoord.client_cli.client_config import ClientSecurity
from kcoord.client_cli.kafka_client import Connection
from kcoord.client_cli.sasl_client import PlainClient
from kcoord.coordinator.runtime.shards import shard_of
from tests.cluster.nodes import Node, init_cluster, nodes, until
from tests.kcoord_process import REPO

IDS = [1, 2, 3]
TTL_MS = 5000
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "node": "node-secret"}
TOPIC, TXN_ID, GROUP, COUNT = "secure", "secure-txn", "secure-reader", 60
# Kafka codes: AclOperation, ResourceType, AclPermissionType, PatternType
READ, WRITE, DESCRIBE, CLUSTER_ACTION = 3, 4, 8, 9
TOPIC_R, GROUP_R, CLUSTER_R, TXN_R = 2, 3, 4, 5
ALLOW, LITERAL, ANY = 3, 3, 1
SECURED = (
    "--listeners", "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    "--listener-security-protocol-map", "CLIENT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
    "--sasl-enabled-mechanisms", "PLAIN",
    "--authorizer", "standard", "--super-users", "User:admin",
    "--inter-broker-listener-name", "INTERNAL", "--inter-broker-sasl-username", "node",
)  # fmt: skip
ENV = {
    "KCOORD_SASL_PLAIN_USERS": ",".join(f"{user}={password}" for user, password in PASSWORDS.items()),
    "KCOORD_INTER_BROKER_SASL_PASSWORD": PASSWORDS["node"],
}


def _acl(resource_type: int, name: str, principal: str, operation: int) -> dict[str, Any]:
    return {
        "resource_type": resource_type, "resource_name": name, "resource_pattern_type": LITERAL,
        "principal": principal, "host": "*", "operation": operation, "permission_type": ALLOW,
    }  # fmt: skip


ACLS = [
    _acl(CLUSTER_R, "kafka-cluster", "User:node", CLUSTER_ACTION),  # all a node needs
    *(_acl(TXN_R, TXN_ID, "User:alice", op) for op in (WRITE, DESCRIBE)),
    *(_acl(TOPIC_R, TOPIC, "User:alice", op) for op in (WRITE, READ, DESCRIBE)),
    _acl(GROUP_R, GROUP, "User:alice", READ),
]


def _admin(node: Node) -> Connection:
    security = ClientSecurity("SASL_PLAINTEXT", None, lambda: PlainClient("admin", PASSWORDS["admin"]))
    return Connection(node.host, node.port, 10, security)


def _acls_seen(node: Node) -> int:
    conn = _admin(node)
    try:
        body = {
            "resource_type_filter": ANY, "resource_name_filter": None, "pattern_type_filter": ANY,
            "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY,
        }  # fmt: skip
        return sum(len(r["acls"]) for r in conn.request(29, body, 2)["resources"])
    finally:
        conn.close()


def _leaders(node: Node) -> dict[int, int] | None:
    """The topic's partition leaders as `node` reports them, once every partition has one."""
    conn = _admin(node)
    try:
        answer = conn.request(3, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}, 9)
    finally:
        conn.close()
    partitions = answer["topics"][0]["partitions"]
    leaders = {int(p["partition_index"]): int(p["leader_id"]) for p in partitions}
    return leaders if len(leaders) == 6 and all(leader >= 0 for leader in leaders.values()) else None


def _setup(cluster: list[Node]) -> dict[int, int]:
    conn = _admin(cluster[0])
    try:
        topic = {
            "name": TOPIC,
            "num_partitions": 6,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        created = conn.request(19, {"topics": [topic], "timeout_ms": 5000}, 4)["topics"][0]
        assert created["error_code"] == 0, created
        results = conn.request(30, {"creations": ACLS}, 2)["results"]
        assert [r["error_code"] for r in results] == [0] * len(ACLS)
    finally:
        conn.close()
    for node in cluster:  # the ACLs and the topic are cluster-wide records: every node follows them
        until(lambda n=node: True if _acls_seen(n) >= len(ACLS) else None, 30, f"ACLs on {node.name}")
    return until(lambda: _leaders(cluster[0]), 30, "every partition led")


def test_a_transaction_commits_over_sasl_only_listeners_with_the_authorizer_on(
    tmp_path: Path, cluster_dsn: str
) -> None:
    pytest.importorskip("confluent_kafka")
    init_cluster(cluster_dsn)
    with nodes(tmp_path, cluster_dsn, IDS, TTL_MS, *SECURED, env=ENV) as cluster:
        leaders = _setup(cluster)
        assert len(set(leaders.values())) >= 2, f"the partitions should be led by several nodes: {leaders}"
        argv = [sys.executable, "-m", "tests.cluster.secure_txn_worker", cluster[0].bootstrap, "alice",
                PASSWORDS["alice"], TOPIC, TXN_ID, GROUP, str(COUNT)]  # fmt: skip
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240, check=False)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert done.returncode == 0, done.stderr[-2000:]
        assert {"committed": True} in events, events
        assert {"read": COUNT, "values": list(range(COUNT))} in events, (events, shard_of(TXN_ID))
        for node in cluster:  # no node-to-node login was refused on the way (markers and verification log it)
            assert node.count("refused this node") == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--inter-broker-listener-name", "NOPE"), "is not a listener of this node"),
        (("--listeners", "CLIENT://127.0.0.1:0", "--listener-security-protocol-map", "CLIENT:SASL_PLAINTEXT"),
         "nodes need --inter-broker-sasl-username"),
        (("--inter-broker-sasl-username", "node", "--inter-broker-sasl-password", "x"),
         "need a SASL inter-broker listener"),
        (("--listeners", "CLIENT://127.0.0.1:0", "--listener-security-protocol-map", "CLIENT:SASL_PLAINTEXT",
          "--sasl-enabled-mechanisms", "SCRAM-SHA-256", "--inter-broker-sasl-username", "node",
          "--inter-broker-sasl-password", "x"), "is not in --sasl-enabled-mechanisms"),
    ],
)  # fmt: skip
def test_inter_broker_settings_that_cannot_work_are_one_line_and_exit_1(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    argv = [sys.executable, "-m", "kcoord", "serve", "--cluster", "postgresql://nobody@127.0.0.1:1/none",
            "--node-id", "1", "--data-dir", str(tmp_path), *flags]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
