"""Authorization of the admin, transaction and KIP-848 APIs on the wire (raw sockets, User:ANONYMOUS):
each refusal is Kafka's error for the resource (ControllerApis.createTopics / createPartitions,
ConfigHelper and KafkaApis.configsAuthorizationApiError, KafkaApis.handle* for the transaction APIs,
handleConsumerGroupHeartbeat / handleConsumerGroupDescribe)."""

from __future__ import annotations

import socket
from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import (
    ALTER,
    CLUSTER,
    CREATE,
    DELETE_ACLS,
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    binding,
    create_acls,
)
from tests.server.wire import call, connect, create_topic

BOB = "User:bob"
E = ErrorCode


def _admin_calls(sock: socket.socket) -> list[Any]:
    configs = {"resources": [{"resource_type": 2, "resource_name": "secret", "configuration_keys": None}]}
    alter = {
        "resources": [{"resource_type": 2, "resource_name": "secret", "configs": []}],
        "validate_only": True,
    }
    partitions = {"topics": [{"name": "secret", "count": 2, "assignments": None}], "timeout_ms": 1000}
    records = {"topics": [{"name": "secret", "partitions": [{"partition_index": 0, "offset": 0}]}]}
    described = call(sock, 32, 4, configs)["results"][0]
    altered = call(sock, 33, 1, alter)["responses"][0]
    return [
        (described["error_code"], described["error_message"]),
        (altered["error_code"], altered["error_message"]),
        call(sock, 44, 1, alter)["responses"][0]["error_code"],
        call(sock, 37, 3, {**partitions, "validate_only": True})["results"][0]["error_code"],
        call(sock, 21, 2, {**records, "timeout_ms": 1000})["topics"][0]["partitions"][0]["error_code"],
        call(sock, 61, 0, {"topics": [{"name": "secret", "partition_indexes": [0]}]})["topics"][0][
            "partitions"
        ][0]["error_code"],
    ]


def _txn_calls(sock: socket.socket) -> list[Any]:
    commit = {
        "transactional_id": "tx-closed",
        "group_id": "g-open",
        "producer_id": 1,
        "producer_epoch": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    add = {"v3_and_below_producer_id": 1, "v3_and_below_producer_epoch": 0}
    closed_add = {
        **add,
        "v3_and_below_transactional_id": "tx-closed",
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
    }
    open_add = {
        **add,
        "v3_and_below_transactional_id": "tx-open",
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}, {"name": "secret", "partitions": [0]}],
    }
    offsets = {"producer_id": 1, "producer_epoch": 0}
    by_topic = call(sock, 24, 3, open_add)["results_by_topic_v3_and_below"]
    return [
        call(sock, 28, 3, commit)["topics"][0]["partitions"][0]["error_code"],
        call(sock, 24, 3, closed_add)["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
            "partition_error_code"
        ],
        {t["name"]: t["results_by_partition"][0]["partition_error_code"] for t in by_topic},
        call(sock, 24, 4, {"transactions": []})["error_code"],
        call(sock, 25, 3, {**offsets, "transactional_id": "tx-closed", "group_id": "g-open"})["error_code"],
        call(sock, 25, 3, {**offsets, "transactional_id": "tx-open", "group_id": "g-closed"})["error_code"],
        call(sock, 65, 0, {"transactional_ids": ["tx-closed"]})["transaction_states"][0]["error_code"],
    ]


def test_admin_transaction_and_consumer_protocol_apis_refuse_with_kafkas_errors(
    acl_server: KcoordServer,
) -> None:
    with connect(acl_server.address) as sock:
        for name in ("t", "secret"):
            assert create_topic(sock, name, 1)["error_code"] == 0
        # the cluster has ACLs (ALTER for ANONYMOUS and bob): no CREATE or CLUSTER_ACTION on it
        acls = [
            binding(CLUSTER, "kafka-cluster", ALTER),
            binding(CLUSTER, "kafka-cluster", ALTER, principal=BOB),
            binding(TOPIC, "secret", READ, principal=BOB),
            binding(TOPIC, "t", WRITE),
            binding(TOPIC, "created-", CREATE, pattern=4),
            binding(TOPIC, "closed-", CREATE, principal=BOB, pattern=4),
            binding(GROUP, "g-open", READ),
            binding(GROUP, "g-closed", READ, principal=BOB),
            binding(TRANSACTIONAL_ID, "tx-closed", WRITE, principal=BOB),
            binding(TRANSACTIONAL_ID, "tx-open", WRITE),
        ]
        assert create_acls(sock, *acls) == [0] * len(acls)
        refused = create_topic(sock, "closed-new", 1, version=5)
        assert (refused["error_code"], refused["error_message"]) == (
            E.TOPIC_AUTHORIZATION_FAILED,
            "Authorization failed.",
        )
        created = create_topic(sock, "created-1", 1, version=5)  # CREATE without DESCRIBE_CONFIGS: no configs
        assert (created["error_code"], created["topic_config_error_code"], created["configs"]) == (0, 29, [])
        assert _admin_calls(sock) == [
            (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
            (E.TOPIC_AUTHORIZATION_FAILED, None),
            *[E.TOPIC_AUTHORIZATION_FAILED] * 4,
        ]
        assert _txn_calls(sock) == [
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            {"t": E.OPERATION_NOT_ATTEMPTED, "secret": E.TOPIC_AUTHORIZATION_FAILED},
            E.CLUSTER_AUTHORIZATION_FAILED,  # v4 is the brokers' form: CLUSTER_ACTION
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            E.GROUP_AUTHORIZATION_FAILED,
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ]
        heartbeat = {
            "member_id": "m",
            "member_epoch": 0,
            "rebalance_timeout_ms": 10000,
            "topic_partitions": [],
        }
        closed = call(sock, 68, 0, {**heartbeat, "group_id": "g-closed", "subscribed_topic_names": ["t"]})
        hidden = call(sock, 68, 0, {**heartbeat, "group_id": "g-open", "subscribed_topic_names": ["secret"]})
        assert (closed["error_code"], hidden["error_code"]) == (
            E.GROUP_AUTHORIZATION_FAILED,
            E.TOPIC_AUTHORIZATION_FAILED,
        )
        described = call(sock, 69, 0, {"group_ids": ["g-closed"], "include_authorized_operations": True})
        assert described["groups"][0]["error_code"] == E.GROUP_AUTHORIZATION_FAILED
        cluster_ops = {"include_cluster_authorized_operations": True}
        assert call(sock, 60, 0, cluster_ops)["cluster_authorized_operations"] == (1 << ALTER) | (
            1 << DESCRIBE
        )
        # ANONYMOUS gives up ALTER on the cluster: markers and broker configs are refused
        cluster_filter = {
            "resource_type_filter": CLUSTER,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": "User:ANONYMOUS",
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        }
        assert (
            call(sock, DELETE_ACLS, 3, {"filters": [cluster_filter]})["filter_results"][0]["error_code"] == 0
        )
        marker = {
            "producer_id": 1,
            "producer_epoch": 0,
            "transaction_result": False,
            "coordinator_epoch": 0,
            "topics": [{"name": "t", "partition_indexes": [0]}],
        }
        written = call(sock, 27, 1, {"markers": [marker]})["markers"][0]["topics"][0]["partitions"][0]
        assert written["error_code"] == E.CLUSTER_AUTHORIZATION_FAILED
        broker = {"resources": [{"resource_type": 4, "resource_name": "0", "configuration_keys": None}]}
        assert call(sock, 32, 4, broker)["results"][0]["error_code"] == E.CLUSTER_AUTHORIZATION_FAILED
        assert call(sock, 60, 0, cluster_ops)["cluster_authorized_operations"] == 0  # no DESCRIBE: 0
