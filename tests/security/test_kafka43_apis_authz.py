"""Issue 33 item 6: authorization of the APIs kcoord now serves, on the wire as User:ANONYMOUS against
`--authorizer standard --allow-everyone-if-no-acl-found true` with ACLs that close the cluster and one
topic to it: each refusal is Kafka's (CLUSTER resource operations: DescribeQuorum DESCRIBE,
UpdateFeatures and AlterReplicaLogDirs ALTER; OffsetForLeaderEpoch CLUSTER_ACTION or DESCRIBE on the
topic; DescribeTopicPartitions DESCRIBE on each topic, unauthorized ones hidden from a listing)."""

from __future__ import annotations

import os

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import CLUSTER, DESCRIBE, READ, TOPIC, binding, create_acls
from tests.server.wire import call, connect, create_topic

BOB = "User:bob"
E = ErrorCode


def test_the_new_apis_refuse_as_kafka_for_their_resources(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        for name in ("open", "secret"):
            assert create_topic(sock, name, 1)["error_code"] == 0
        # ACLs on the cluster and on "secret" for bob only: both closed to ANONYMOUS
        acls = [
            binding(CLUSTER, "kafka-cluster", DESCRIBE, principal=BOB),
            binding(TOPIC, "secret", READ, principal=BOB),
        ]
        assert create_acls(sock, *acls) == [0, 0]
        quorum = call(
            sock,
            55,
            2,
            {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
        )
        assert (quorum["error_code"], quorum["error_message"], quorum["topics"]) == (
            E.CLUSTER_AUTHORIZATION_FAILED, "Request is not authorized.", [],
        )  # fmt: skip
        update = {
            "timeout_ms": 1000,
            "feature_updates": [{"feature": "transaction.version", "max_version_level": 2}],
        }
        features = call(sock, 57, 1, update)
        assert (features["error_code"], features["results"]) == (E.CLUSTER_AUTHORIZATION_FAILED, [])
        log_dir = os.path.abspath(acl_server.data_dir / "topics")
        moved = call(
            sock, 34, 2, {"dirs": [{"path": log_dir, "topics": [{"name": "open", "partitions": [0]}]}]}
        )
        assert moved["results"][0]["partitions"][0]["error_code"] == E.CLUSTER_AUTHORIZATION_FAILED
        epochs = {
            "replica_id": -1,
            "topics": [
                {
                    "topic": name,
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                }
                for name in ("open", "secret")
            ],
        }
        answered = {t["topic"]: t["partitions"][0]["error_code"] for t in call(sock, 23, 4, epochs)["topics"]}
        assert answered == {"open": E.NONE, "secret": E.TOPIC_AUTHORIZATION_FAILED}
        named = {
            "topics": [{"name": "open"}, {"name": "secret"}],
            "response_partition_limit": 10,
            "cursor": None,
        }
        described = {t["name"]: t["error_code"] for t in call(sock, 75, 0, named)["topics"]}
        assert described == {"open": E.NONE, "secret": E.TOPIC_AUTHORIZATION_FAILED}
        listing = call(sock, 75, 0, {"topics": [], "response_partition_limit": 10, "cursor": None})
        assert [t["name"] for t in listing["topics"]] == ["open"]  # never revealed to exist
