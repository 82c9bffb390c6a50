"""Kafka's per-connection guarantee (SocketServer mutes a channel while its request is in flight): a
request sees the effects of every earlier request on its connection (kcoord/broker/ordering.py).

Each case sends a write and the reads that can observe it in one `sendall` on one raw socket, so the
server receives them together, and asserts each read saw the write. The server fsyncs every write
(`--fsync always`): a write's effect lands after a file write in a thread, so a read started at
receipt would see the old state. ACLs need the standard authorizer; ANONYMOUS (the plaintext
principal) is its super user, so every other API is allowed. DescribeTopicPartitions (75) is not
served yet: Metadata stands for it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from kcoord.protocol.messages.consumer_group_heartbeat import UNCHANGED_SINCE_LAST_HEARTBEAT
from tests.kcoord_process import REPO, KcoordServer
from tests.server.test_dataplane_wire import batch
from tests.server.test_transactions_wire import txn_batch
from tests.server.wire import call, connect, create_topic, read_frame

pytestmark = pytest.mark.timeout(120)

CLIENTS = Path(__file__).parent / "clients"

Request = tuple[int, int, dict[str, Any]]  # api key, version, body
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
LATEST, EARLIEST = -1, -2  # ListOffsetsRequest.LATEST_TIMESTAMP / EARLIEST_TIMESTAMP
TOPIC_RESOURCE, LITERAL, ANY, READ, ALLOW = 2, 3, 1, 3, 3  # ConfigResource / ACL codes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    data = tmp_path_factory.mktemp("order") / "data"
    proc = KcoordServer(
        data, "--fsync", "always", "--authorizer", "standard", "--super-users", "User:ANONYMOUS"
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))


@pytest.fixture
def sock(server: KcoordServer) -> Iterator[socket.socket]:
    with connect(server.address) as s:
        yield s


def pipelined(sock: socket.socket, *requests: Request) -> list[dict[str, Any]]:
    """Every request in one send; the responses in order (none for a Produce with acks=0)."""
    sock.sendall(b"".join(encode_request(k, v, 100 + i, b) for i, (k, v, b) in enumerate(requests)))
    answers = []
    for i, (api_key, version, body) in enumerate(requests):
        if api_key == PRODUCE and body["acks"] == 0:
            continue
        correlation_id, response = decode_response(api_key, version, read_frame(sock))
        assert correlation_id == 100 + i
        answers.append(response)
    return answers


# -- request bodies ------------------------------------------------------------------------------------
def produce(topic: str, records: bytes, acks: int = -1, tid: str | None = None) -> Request:
    data = [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]
    return PRODUCE, 9, {"transactional_id": tid, "acks": acks, "timeout_ms": 5000, "topic_data": data}


def fetch(topic: str, offset: int = 0, committed: bool = False, wait_ms: int = 0) -> Request:
    partition = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    body = {
        "max_wait_ms": wait_ms,
        "min_bytes": 1 if wait_ms else 0,
        "max_bytes": 1 << 20,
        "isolation_level": int(committed),
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [partition]}],
        "forgotten_topics_data": [],
    }
    return FETCH, 12, body


def list_offsets(topic: str, timestamp: int, committed: bool = False) -> Request:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
    body = {
        "replica_id": -1,
        "isolation_level": int(committed),
        "topics": [{"name": topic, "partitions": [partition]}],
    }
    return LIST_OFFSETS, 7, body


def metadata(*topics: str) -> Request:
    wanted = [{"name": name, "topic_id": uuid.UUID(int=0)} for name in topics]
    return METADATA, 12, {"topics": wanted, "allow_auto_topic_creation": False}


def offset_commit(group: str, topic: str, offset: int) -> Request:
    partition = {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1}
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{**partition, "committed_metadata": None}]}],
    }
    return OFFSET_COMMIT, 8, body


def offset_fetch(group: str, topic: str, require_stable: bool = False) -> Request:
    groups = [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}]
    return OFFSET_FETCH, 8, {"groups": groups, "require_stable": require_stable}


def describe_configs(topic: str) -> Request:
    resource = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": topic,
        "configuration_keys": ["retention.ms"],
    }
    return 32, 4, {"resources": [resource], "include_synonyms": False, "include_documentation": False}


def acl_filter(name: str) -> dict[str, Any]:
    return {
        "resource_type_filter": TOPIC_RESOURCE,
        "resource_name_filter": name,
        "pattern_type_filter": LITERAL,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY,
        "permission_type": ANY,
    }


def describe_groups(group: str) -> Request:
    return 15, 5, {"groups": [group], "include_authorized_operations": False}


LIST_GROUPS: Request = (16, 5, {"states_filter": [], "types_filter": []})


# -- answers -------------------------------------------------------------------------------------------
def partition_of(response: dict[str, Any], responses: str = "responses") -> dict[str, Any]:
    return response[responses][0]["partitions"][0]  # type: ignore[no-any-return]


def committed(response: dict[str, Any]) -> tuple[int, int]:
    """(error code, committed offset) of OffsetFetch v8's only partition."""
    (group,) = response["groups"]
    assert group["error_code"] == ErrorCode.NONE
    part = group["topics"][0]["partitions"][0]
    return part["error_code"], part["committed_offset"]


def retention_ms(response: dict[str, Any]) -> str:
    (result,) = response["results"]
    assert result["error_code"] == ErrorCode.NONE
    return next(c["value"] for c in result["configs"] if c["name"] == "retention.ms")  # type: ignore[no-any-return]


def topic(sock: socket.socket, name: str, partitions: int = 1) -> str:
    assert create_topic(sock, name, partitions)["error_code"] == ErrorCode.NONE
    return name


# -- the data plane ------------------------------------------------------------------------------------
def test_fetch_and_list_offsets_see_the_produce_before_them(sock: socket.socket) -> None:
    name = topic(sock, "order-produce")
    produced, fetched, latest = pipelined(
        sock, produce(name, batch(3)), fetch(name), list_offsets(name, LATEST)
    )
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    part = partition_of(fetched)
    assert (part["error_code"], part["high_watermark"]) == (ErrorCode.NONE, 3) and part["records"]
    assert partition_of(latest, "topics")["offset"] == 3


def test_a_produce_without_response_is_seen_by_the_list_offsets_after_it(sock: socket.socket) -> None:
    name = topic(sock, "order-acks0")
    (latest,) = pipelined(sock, produce(name, batch(4), acks=0), list_offsets(name, LATEST))
    assert partition_of(latest, "topics")["offset"] == 4


def test_list_offsets_and_fetch_see_the_log_start_delete_records_moved(sock: socket.socket) -> None:
    name = topic(sock, "order-delete-records")
    assert (
        pipelined(sock, produce(name, batch(5)))[0]["responses"][0]["partition_responses"][0]["base_offset"]
        == 0
    )
    deleted = {"name": name, "partitions": [{"partition_index": 0, "offset": 2}]}
    moved, earliest, fetched = pipelined(
        sock, (21, 2, {"topics": [deleted], "timeout_ms": 5000}), list_offsets(name, EARLIEST), fetch(name, 0)
    )
    assert partition_of(moved, "topics")["low_watermark"] == 2
    assert partition_of(earliest, "topics")["offset"] == 2
    assert partition_of(fetched)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_parked_fetch_does_not_see_a_produce_sent_after_it(sock: socket.socket) -> None:
    """Kafka reads the Produce only once the Fetch is answered: the Fetch waits out max_wait_ms empty."""
    name = topic(sock, "order-parked-fetch")
    fetched, produced = pipelined(sock, fetch(name, wait_ms=300), produce(name, batch(2)))
    part = partition_of(fetched)
    assert (part["error_code"], part["high_watermark"], part["records"]) == (ErrorCode.NONE, 0, b"")
    assert produced["responses"][0]["partition_responses"][0]["base_offset"] == 0


# -- offsets -------------------------------------------------------------------------------------------
def test_offset_fetch_sees_the_offset_commit_before_it(sock: socket.socket) -> None:
    name = topic(sock, "order-commit")
    commit, fetched = pipelined(sock, offset_commit("order-g1", name, 7), offset_fetch("order-g1", name))
    assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, 7)


def test_offset_fetch_sees_the_offset_delete_before_it(sock: socket.socket) -> None:
    name = topic(sock, "order-offset-delete")
    assert (
        committed(pipelined(sock, offset_commit("order-g2", name, 5), offset_fetch("order-g2", name))[1])[1]
        == 5
    )
    delete = {"group_id": "order-g2", "topics": [{"name": name, "partitions": [{"partition_index": 0}]}]}
    deleted, fetched = pipelined(sock, (47, 0, delete), offset_fetch("order-g2", name))
    assert deleted["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, -1)


def _begin(sock: socket.socket, tid: str) -> tuple[int, int]:
    """A transactional producer's id and epoch (InitProducerId v5, Transactions V1 from here on)."""
    body = {
        "transactional_id": tid,
        "transaction_timeout_ms": 60_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    answer = call(sock, 22, 5, body)
    assert answer["error_code"] == ErrorCode.NONE
    return answer["producer_id"], answer["producer_epoch"]


def _end(tid: str, pid: int, epoch: int) -> Request:
    return 26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True}


def test_offset_fetch_sees_the_offsets_a_committed_transaction_wrote(sock: socket.socket) -> None:
    name, tid, group = topic(sock, "order-txn-offsets"), "order-tid-1", "order-g3"
    pid, epoch = _begin(sock, tid)
    add = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}
    assert call(sock, 25, 3, add)["error_code"] == ErrorCode.NONE
    partition = {
        "partition_index": 0,
        "committed_offset": 11,
        "committed_leader_epoch": -1,
        "committed_metadata": None,
    }
    txn_commit = {
        "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": name, "partitions": [partition]}],
    }  # fmt: skip
    wrote, ended, fetched = pipelined(
        sock, (28, 3, txn_commit), _end(tid, pid, epoch), offset_fetch(group, name, require_stable=True)
    )
    assert wrote["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert ended["error_code"] == ErrorCode.NONE
    assert committed(fetched) == (ErrorCode.NONE, 11)


def test_end_txn_is_seen_by_describe_transactions_and_its_markers_by_a_read_committed_fetch(
    sock: socket.socket,
) -> None:
    """EndTxn is answered once its Prepare record is durable and the markers follow, in Kafka too
    (TransactionCoordinator.endTransaction): a read_committed Fetch after it waits for them."""
    name, tid = topic(sock, "order-txn"), "order-tid-2"
    pid, epoch = _begin(sock, tid)
    add = {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": name, "partitions": [0]}],
    }  # fmt: skip
    call(sock, 24, 3, add)
    (produced,) = pipelined(sock, produce(name, txn_batch(pid, epoch, 0, [b"a", b"b"]), tid=tid))
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    ended, described, fetched = pipelined(
        sock,
        _end(tid, pid, epoch),
        (65, 0, {"transactional_ids": [tid]}),
        fetch(name, committed=True, wait_ms=10_000),
    )
    assert ended["error_code"] == ErrorCode.NONE
    assert described["transaction_states"][0]["transaction_state"] in ("PrepareCommit", "CompleteCommit")
    part = partition_of(fetched)
    assert part["error_code"] == ErrorCode.NONE and part["records"] and part["last_stable_offset"] == 3


# -- topics and configs --------------------------------------------------------------------------------
def _metadata_partitions(response: dict[str, Any]) -> tuple[int, int]:
    """(error code, partitions) of the only topic in a Metadata answer."""
    (found,) = response["topics"]
    return found["error_code"], len(found["partitions"])


def test_metadata_sees_create_topics_create_partitions_and_delete_topics(sock: socket.socket) -> None:
    name = "order-topic-life"
    new = {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
    created, seen = pipelined(sock, (19, 7, {"topics": [new], "timeout_ms": 5000}), metadata(name))
    assert created["topics"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.NONE, 2)
    grow = {"name": name, "count": 5, "assignments": None}
    grown, seen = pipelined(
        sock, (37, 3, {"topics": [grow], "timeout_ms": 5000, "validate_only": False}), metadata(name)
    )
    assert grown["results"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.NONE, 5)
    gone = {"name": name, "topic_id": uuid.UUID(int=0)}
    deleted, seen = pipelined(sock, (20, 6, {"topics": [gone], "timeout_ms": 5000}), metadata(name))
    assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
    assert _metadata_partitions(seen) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)


def test_describe_configs_sees_alter_configs_and_incremental_alter_configs(sock: socket.socket) -> None:
    name = topic(sock, "order-configs")
    config = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": name,
        "configs": [{"name": "retention.ms", "value": "1234"}],
    }
    altered, described = pipelined(
        sock, (33, 2, {"resources": [config], "validate_only": False}), describe_configs(name)
    )
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    assert retention_ms(described) == "1234"
    config["configs"] = [{"name": "retention.ms", "config_operation": 0, "value": "5678"}]  # SET
    altered, described = pipelined(
        sock, (44, 1, {"resources": [config], "validate_only": False}), describe_configs(name)
    )
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    assert retention_ms(described) == "5678"


# -- ACLs and SCRAM credentials --------------------------------------------------------------------------
def test_describe_acls_sees_create_acls_and_delete_acls(sock: socket.socket) -> None:
    binding = {
        "resource_type": TOPIC_RESOURCE, "resource_name": "order-acl", "resource_pattern_type": LITERAL,
        "principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW,
    }  # fmt: skip
    describe: Request = (29, 3, acl_filter("order-acl"))
    created, described = pipelined(sock, (30, 3, {"creations": [binding]}), describe)
    assert created["results"][0]["error_code"] == ErrorCode.NONE
    (resource,) = described["resources"]
    assert [(a["principal"], a["operation"]) for a in resource["acls"]] == [("User:alice", READ)]
    deleted, described = pipelined(sock, (31, 3, {"filters": [acl_filter("order-acl")]}), describe)
    assert len(deleted["filter_results"][0]["matching_acls"]) == 1
    assert described["resources"] == []


def test_describe_user_scram_credentials_sees_alter_user_scram_credentials(sock: socket.socket) -> None:
    upsert = {
        "name": "order-alice",
        "mechanism": 1,
        "iterations": 8192,
        "salt": b"s" * 16,
        "salted_password": b"p" * 32,
    }
    altered, described = pipelined(
        sock,
        (51, 0, {"deletions": [], "upsertions": [upsert]}),
        (50, 0, {"users": [{"name": "order-alice"}]}),
    )
    assert altered["results"][0]["error_code"] == ErrorCode.NONE
    (result,) = described["results"]
    assert result["error_code"] == ErrorCode.NONE
    assert [(c["mechanism"], c["iterations"]) for c in result["credential_infos"]] == [(1, 8192)]


# -- groups --------------------------------------------------------------------------------------------
def _classic_member(sock: socket.socket, group: str) -> str:
    """A member of a classic group, joined and synced: the group is Stable."""
    body = {
        "group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }  # fmt: skip
    first = call(sock, 11, 5, body)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    joined = call(sock, 11, 5, {**body, "member_id": first["member_id"]})
    assert joined["error_code"] == ErrorCode.NONE
    member = str(joined["member_id"])
    sync = {
        "group_id": group, "generation_id": joined["generation_id"], "member_id": member,
        "group_instance_id": None, "assignments": [{"member_id": member, "assignment": b""}],
    }  # fmt: skip
    assert call(sock, 14, 3, sync)["error_code"] == ErrorCode.NONE
    return member


def test_describe_groups_and_list_groups_see_leave_group_and_delete_groups(sock: socket.socket) -> None:
    group = "order-classic"
    member = _classic_member(sock, group)
    leave = {"group_id": group, "members": [{"member_id": member, "group_instance_id": None, "reason": None}]}
    left, described, listed = pipelined(sock, (13, 5, leave), describe_groups(group), LIST_GROUPS)
    assert left["error_code"] == ErrorCode.NONE
    assert (described["groups"][0]["group_state"], described["groups"][0]["members"]) == ("Empty", [])
    assert {(g["group_id"], g["group_state"]) for g in listed["groups"]} >= {(group, "Empty")}
    deleted, described, listed = pipelined(
        sock, (42, 2, {"groups_names": [group]}), describe_groups(group), LIST_GROUPS
    )
    assert deleted["results"][0]["error_code"] == ErrorCode.NONE
    assert described["groups"][0]["group_state"] == "Dead"
    assert group not in {g["group_id"] for g in listed["groups"]}


def test_consumer_group_describe_sees_the_member_a_heartbeat_joined(sock: socket.socket) -> None:
    group, member = "order-consumer", str(uuid.uuid4())
    join = {
        "group_id": group, "member_id": member, "member_epoch": 0, **UNCHANGED_SINCE_LAST_HEARTBEAT,
        "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["order-unsubscribed"],
        "topic_partitions": [],
    }  # fmt: skip
    joined, described = pipelined(
        sock, (68, 1, join), (69, 1, {"group_ids": [group], "include_authorized_operations": False})
    )
    assert joined["error_code"] == ErrorCode.NONE
    (seen,) = described["groups"]
    assert seen["error_code"] == ErrorCode.NONE
    assert [m["member_id"] for m in seen["members"]] == [member]


# -- the stock client that found it ---------------------------------------------------------------------
def test_librdkafka_list_offsets_right_after_delete_records_sees_the_new_start(server: KcoordServer) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(CLIENTS / "confluent_delete_then_earliest.py"),
            server.bootstrap,
            "order-rdkafka",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"low_watermark": 2, "earliest": 2}
