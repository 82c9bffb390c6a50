"""Authorization on the wire (raw sockets, a real server, principal User:ANONYMOUS on PLAINTEXT): the ACL
APIs (AclApis) and the checks of the served APIs in KafkaApis' order with Kafka's error per group, topic
or partition. A topic the caller may not describe answers exactly as a missing one it may not describe:
its existence is never revealed (KafkaApis.handleTopicMetadataRequest and the data-plane APIs check the
ACL before existence)."""

from __future__ import annotations

import socket
import urllib.request
import uuid
from typing import Any

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.security.conftest import (
    ALL,
    ALLOW,
    ALTER,
    ANONYMOUS,
    CLUSTER,
    DELETE_ACLS,
    DENY,
    DESCRIBE,
    DESCRIBE_ACLS,
    GROUP,
    LITERAL,
    PREFIXED,
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


def acl_filter(
    resource_type: int = 1,
    name: str | None = None,
    pattern: int = 1,
    principal: str | None = None,
    operation: int = 1,
    permission: int = 1,
) -> dict[str, Any]:
    """AclBindingFilter on the wire; 1 = ANY for every code."""
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": None,
        "operation": operation,
        "permission_type": permission,
    }


def described(sock: socket.socket, version: int = 3, **kwargs: Any) -> set[tuple[Any, ...]]:
    response = call(sock, DESCRIBE_ACLS, version, acl_filter(**kwargs))
    assert response["error_code"] == 0, response
    return {
        (
            r["resource_type"],
            r["resource_name"],
            r["pattern_type"],
            a["principal"],
            a["host"],
            a["operation"],
            a["permission_type"],
        )
        for r in response["resources"]
        for a in r["acls"]
    }


def test_acl_apis_answer_security_disabled_without_an_authorizer(tmp_path: Any) -> None:
    proc = KcoordServer(tmp_path / "data", "--fsync", "never")
    proc.start()
    try:
        with connect(proc.address) as sock:
            response = call(sock, DESCRIBE_ACLS, 1, acl_filter())
            assert (response["error_code"], response["error_message"]) == (
                E.SECURITY_DISABLED,
                "No Authorizer is configured on the broker",
            )
            assert create_acls(sock, binding(TOPIC, "t", READ), binding(GROUP, "g", READ)) == [54, 54]
            deleted = call(sock, DELETE_ACLS, 2, {"filters": [acl_filter()]})["filter_results"]
            assert [(r["error_code"], r["error_message"]) for r in deleted] == [
                (54, "No Authorizer is configured.")
            ]
    finally:
        proc.kill()


def test_acls_are_created_validated_described_deleted_and_replayed(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        errors = create_acls(
            sock,
            binding(TOPIC, "orders-", READ, pattern=PREFIXED),
            binding(TOPIC, "orders-eu", WRITE, DENY, principal=BOB),
            binding(GROUP, "*", READ),
            binding(CLUSTER, "kafka-cluster", ALTER),
            binding(CLUSTER, "other-cluster", ALTER),  # AclApis: the only CLUSTER name is kafka-cluster
            binding(TOPIC, "", READ),  # empty resource name
            binding(TOPIC, "t", READ, pattern=2),  # MATCH is a filter, not a pattern (validateNewAcl)
            binding(TOPIC, "t", 1),  # operation ANY
        )
        assert errors == [0, 0, 0, 0, 42, 42, 42, 42]
        assert create_acls(sock, binding(GROUP, "*", READ)) == [0]  # an existing binding: kept once
        assert len(described(sock)) == 4
        # MATCH: every pattern that applies to the name (LITERAL, `*`, PREFIXED)
        assert described(sock, resource_type=TOPIC, name="orders-eu", pattern=2) == {
            (TOPIC, "orders-", PREFIXED, ANONYMOUS, "*", READ, ALLOW),
            (TOPIC, "orders-eu", LITERAL, BOB, "*", WRITE, DENY),
        }
        assert described(sock, principal=BOB) == {(TOPIC, "orders-eu", LITERAL, BOB, "*", WRITE, DENY)}
        # v0 (LITERAL only) is gone since Kafka 4 (KIP-896); v1 asks for LITERAL explicitly
        v1 = described(sock, version=1, pattern=LITERAL)
        assert {row[2] for row in v1} == {LITERAL} and len(v1) == 3
        result = call(
            sock, DELETE_ACLS, 3, {"filters": [acl_filter(resource_type=TOPIC), acl_filter(operation=0)]}
        )
        first, unknown = result["filter_results"]
        assert first["error_code"] == 0 and len(first["matching_acls"]) == 2
        assert (unknown["error_code"], unknown["error_message"]) == (42, "Unknown entryFilter.")
    acl_server.restart()  # the bindings are records in the coordinator log, replayed at startup
    with connect(acl_server.address) as sock:
        assert described(sock) == {
            (GROUP, "*", LITERAL, ANONYMOUS, "*", READ, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, ANONYMOUS, "*", ALTER, ALLOW),
        }


def _metadata(sock: socket.socket, names: list[str] | None) -> dict[str, Any]:
    topics = None if names is None else [{"name": n} for n in names]
    body = {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": True}
    return call(sock, 3, 9, body)


def _data_plane(sock: socket.socket, name: str) -> list[Any]:
    """What each topic API answers for `name`, partition 0 (group g-open may commit)."""
    produce = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": name, "partition_data": [{"index": 0, "records": b"x"}]}],
    }
    fetch = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1000,
        "topics": [
            {"topic": name, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}
        ],
    }
    offsets = {
        "replica_id": -1,
        "topics": [{"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    commit = {
        "group_id": "g-open",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": name, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    fetched = {"groups": [{"group_id": "g-open", "topics": [{"name": name, "partition_indexes": [0]}]}]}
    return [
        call(sock, 0, 9, produce)["responses"][0]["partition_responses"][0],
        call(sock, 1, 12, fetch)["responses"][0]["partitions"][0]["error_code"],
        call(sock, 2, 7, offsets)["topics"][0]["partitions"][0],
        call(sock, 8, 8, commit)["topics"][0]["partitions"][0],
        call(sock, 9, 8, fetched)["groups"][0]["topics"][0]["partitions"][0],
        call(sock, 20, 5, {"topic_names": [name], "timeout_ms": 1000})["responses"][0]["error_code"],
    ]


def test_a_hidden_topic_answers_exactly_as_a_missing_one(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        for name in ("visible", "secret"):
            assert create_topic(sock, name, 1)["error_code"] == 0
        # ANONYMOUS may use `visible`; `secret` (existing) and `ghost` (missing) have ACLs for bob only
        assert create_acls(
            sock,
            binding(TOPIC, "visible", ALL),
            binding(TOPIC, "secret", ALL, principal=BOB),
            binding(TOPIC, "ghost", ALL, principal=BOB),
            binding(GROUP, "g-open", READ),
            binding(CLUSTER, "kafka-cluster", ALTER),  # the cluster has ACLs: no DELETE / CREATE on it
        ) == [0, 0, 0, 0, 0]
        secret, ghost = _metadata(sock, ["secret"])["topics"], _metadata(sock, ["ghost"])["topics"]
        assert secret[0]["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
        assert secret == [{**ghost[0], "name": "secret"}]
        assert secret[0]["topic_id"] == uuid.UUID(int=0) and secret[0]["partitions"] == []
        everything = _metadata(sock, None)["topics"]
        assert [t["name"] for t in everything] == ["visible"]  # all topics: the hidden one left out
        # authorized operations come from the ACLs: ALL on `visible`
        assert everything[0]["topic_authorized_operations"] == sum(
            1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11)
        )
        assert _data_plane(sock, "visible")[1] == 0  # Fetch: READ on `visible`
        hidden, missing = _data_plane(sock, "secret"), _data_plane(sock, "ghost")
        assert hidden == missing
        denied = E.TOPIC_AUTHORIZATION_FAILED
        assert [
            hidden[0]["error_code"],
            hidden[1],
            hidden[2]["error_code"],
            hidden[3]["error_code"],
            hidden[4]["error_code"],
            hidden[5],
        ] == [denied] * 6
        assert hidden[4]["committed_offset"] == -1
        # a describable missing topic is unknown, as without an authorizer
        assert _metadata(sock, ["nowhere"])["topics"][0]["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION


def _group_calls(sock: socket.socket, group: str) -> list[int]:
    join = {
        "group_id": group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    member = {"group_id": group, "generation_id": 1, "member_id": "m"}
    commit = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    return [
        call(sock, 11, 5, join)["error_code"],
        call(sock, 14, 3, {**member, "assignments": []})["error_code"],
        call(sock, 12, 3, member)["error_code"],
        call(sock, 13, 3, {"group_id": group, "members": [{"member_id": "m"}]})["error_code"],
        call(sock, 8, 8, commit)["topics"][0]["partitions"][0]["error_code"],
        call(sock, 9, 8, {"groups": [{"group_id": group, "topics": None}]})["groups"][0]["error_code"],
        call(sock, 10, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]["error_code"],
        call(sock, 15, 5, {"groups": [group]})["groups"][0]["error_code"],
        call(sock, 42, 2, {"groups_names": [group]})["results"][0]["error_code"],
    ]


def test_groups_transactions_and_the_cluster_are_checked_with_kafkas_errors(acl_server: KcoordServer) -> None:
    with connect(acl_server.address) as sock:
        assert create_topic(sock, "t", 1)["error_code"] == 0
        commit = {
            "group_id": "g-closed",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
        }
        assert call(sock, 8, 8, commit)["topics"][0]["partitions"][0]["error_code"] == 0  # no ACL yet: open
        assert create_acls(
            sock,
            binding(GROUP, "g-closed", READ, principal=BOB),
            binding(GROUP, "g-open", READ),
            binding(TRANSACTIONAL_ID, "tx-closed", WRITE, principal=BOB),
        ) == [0, 0, 0]
        assert _group_calls(sock, "g-closed") == [E.GROUP_AUTHORIZATION_FAILED] * 9
        # READ on g-open implies DESCRIBE; DELETE is not granted
        opened = call(sock, 15, 5, {"groups": ["g-open"], "include_authorized_operations": True})["groups"][0]
        assert (opened["error_code"], opened["authorized_operations"]) == (0, (1 << READ) | (1 << DESCRIBE))
        assert call(sock, 42, 2, {"groups_names": ["g-open"]})["results"][0]["error_code"] == 30
        init = call(sock, 22, 4, {"transactional_id": "tx-closed", "transaction_timeout_ms": 60000})
        assert (init["error_code"], init["producer_id"], init["producer_epoch"]) == (53, -1, -1)
        coordinator = call(sock, 10, 4, {"key_type": 1, "coordinator_keys": ["tx-closed"]})["coordinators"][0]
        assert (coordinator["error_code"], coordinator["node_id"]) == (53, -1)
        end = {"transactional_id": "tx-closed", "producer_id": 1, "producer_epoch": 0, "committed": True}
        assert call(sock, 26, 3, end)["error_code"] == 53
        # idempotent producers: no ACL on the cluster applies -> allow.everyone.if.no.acl.found
        assert (
            call(sock, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})["error_code"] == 0
        )
        assert {g["group_id"] for g in call(sock, 16, 4, {})["groups"]} == {
            "g-closed"
        }  # DESCRIBE on the cluster
        # the cluster gets an ACL for bob alone: ANONYMOUS loses the cluster and the ACL APIs
        assert create_acls(sock, binding(CLUSTER, "kafka-cluster", ALTER, principal=BOB)) == [0]
        assert call(sock, 16, 4, {})["groups"] == []  # g-closed is not describable: left out
        assert create_acls(sock, binding(TOPIC, "t", READ)) == [E.CLUSTER_AUTHORIZATION_FAILED]
        assert call(sock, DESCRIBE_ACLS, 3, acl_filter())["error_code"] == E.CLUSTER_AUTHORIZATION_FAILED
        # no IDEMPOTENT_WRITE on the cluster now, but WRITE on some topic: authorizeByResourceType probes
        # the topic "hardcode", to which no ACL applies, and allow.everyone.if.no.acl.found allows it
        idempotent = call(sock, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert idempotent["error_code"] == 0
    with urllib.request.urlopen(f"http://127.0.0.1:{_http_port(acl_server)}/metrics", timeout=10) as response:
        metrics = response.read().decode()
    assert 'kcoord_authorization_denials_total{api="JoinGroup"} 1.0' in metrics
    assert 'kcoord_authorization_denials_total{api="CreateAcls"} 1.0' in metrics


def _http_port(server: KcoordServer) -> int:
    match = server.wait_for(r"http endpoint on (\S+):(\d+)", 10)
    return int(match.group(2))
