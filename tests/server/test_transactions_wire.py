"""Transactions on the wire (raw sockets, real server): Kafka 4's Transactions V2 request sequence, which
no client on this machine sends (Java's TransactionManager with transaction.version 2: no
AddPartitionsToTxn, no AddOffsetsToTxn, Produce v12, TxnOffsetCommit v5, EndTxn v5 bumping the epoch),
and the coordinator's errors, each as Kafka's TransactionCoordinator and KafkaApis answer it.

Batches are built by kafka-python's DefaultRecordBatchBuilder (an independent encoder)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.coordinator.transactions import offsets_partition_for
from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response, encode_request
from tests.integration.conftest import wait_until
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic, read_frame

TOPIC = "t"


def txn_batch(
    producer_id: int, epoch: int, sequence: int, values: list[bytes], transactional: bool = True
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, transactional, producer_id, epoch, sequence, batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, None, value, [])
    return bytes(builder.build())


def produce(
    sock: socket.socket, version: int, tid: str | None, records: bytes, partition: int = 0
) -> ErrorCode:
    body = {
        "transactional_id": tid,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": records}]}],
    }
    return ErrorCode(call(sock, 0, version, body)["responses"][0]["partition_responses"][0]["error_code"])


def init_pid(sock: socket.socket, tid: str | None, version: int = 5, timeout_ms: int = 60_000,
             producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:  # fmt: skip
    body = {"transactional_id": tid, "transaction_timeout_ms": timeout_ms}
    if version >= 3:
        body |= {"producer_id": producer_id, "producer_epoch": epoch}
    return call(sock, 22, version, body)


def add_partitions(sock: socket.socket, tid: str, pid: int, epoch: int, partitions: list[int],
                   version: int = 3, topic: str = TOPIC) -> dict[int, ErrorCode]:  # fmt: skip
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
    }
    topics = call(sock, 24, version, body)["results_by_topic_v3_and_below"]
    return {
        r["partition_index"]: ErrorCode(r["partition_error_code"])
        for t in topics
        for r in t["results_by_partition"]
    }


def end_txn(
    sock: socket.socket, tid: str, pid: int, epoch: int, commit: bool, version: int = 3
) -> dict[str, Any]:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    return call(sock, 26, version, body)


def describe(sock: socket.socket, tid: str) -> dict[str, Any]:
    return call(sock, 65, 0, {"transactional_ids": [tid]})["transaction_states"][0]  # type: ignore[no-any-return]


def fetch_committed(sock: socket.socket) -> dict[str, Any]:
    body = {
        "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 1, "session_id": 0,
        "session_epoch": -1, "forgotten_topics_data": [],
        "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                    "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    return call(sock, 1, 12, body)["responses"][0]["partitions"][0]  # type: ignore[no-any-return]


def committed_offset(sock: socket.socket, group: str) -> int:
    body = {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0]}], "require_stable": True}
    partition = call(sock, 9, 7, body)["topics"][0]["partitions"][0]
    return -1 if partition["error_code"] else int(partition["committed_offset"])


@pytest.fixture
def conn(server: KcoordServer) -> socket.socket:
    sock = connect(server.address)
    assert create_topic(sock, TOPIC, 2)["error_code"] == ErrorCode.NONE
    return sock


def test_kafka_4_transactions_v2_sequence(conn: socket.socket) -> None:
    versions = call(
        conn, 18, 4, {"client_software_name": "apache-kafka-java", "client_software_version": "4.0.0"}
    )
    assert {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2} in [
        dict(f) for f in versions["finalized_features"]
    ]
    # Produce v12+ (Transactions V2; v13 names topics by id), EndTxn v5, TxnOffsetCommit v5
    maxima = {k["api_key"]: k["max_version"] for k in versions["api_keys"]}
    assert maxima[0] >= 12 and (maxima[26], maxima[28]) == (5, 5)
    coordinator = call(conn, 10, 4, {"key_type": 1, "coordinator_keys": ["v2-app"]})["coordinators"][0]
    assert coordinator["error_code"] == ErrorCode.NONE and coordinator["node_id"] == 0
    init = init_pid(conn, "v2-app")
    pid, epoch = init["producer_id"], init["producer_epoch"]
    assert init["error_code"] == ErrorCode.NONE and epoch == 0

    # Produce v12 adds the partition itself; TxnOffsetCommit v5 adds the group's offsets partition.
    assert produce(conn, 12, "v2-app", txn_batch(pid, epoch, 0, [b"one", b"two"])) == ErrorCode.NONE
    body = {
        "transactional_id": "v2-app", "group_id": "v2-group", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 2,
                                                  "committed_leader_epoch": -1, "committed_metadata": ""}]}],
    }  # fmt: skip
    answer = call(conn, 28, 5, body)
    assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    described = describe(conn, "v2-app")
    assert described["transaction_state"] == "Ongoing"
    assert {(t["topic"], p) for t in described["topics"] for p in t["partitions"]} == {
        (TOPIC, 0),
        offsets_partition_for("v2-group"),
    }
    assert committed_offset(conn, "v2-group") == -1  # pending until the marker

    ended = end_txn(conn, "v2-app", pid, epoch, commit=True, version=5)
    assert ended == {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": pid,
                     "producer_epoch": epoch + 1}  # fmt: skip
    wait_until(
        lambda: describe(conn, "v2-app")["transaction_state"] == "CompleteCommit", 10, "CompleteCommit"
    )
    assert committed_offset(conn, "v2-group") == 2
    read = fetch_committed(conn)
    assert read["last_stable_offset"] == read["high_watermark"] == 3  # two records and the marker

    # The next transaction runs at the bumped epoch from sequence 0, and is aborted.
    assert produce(conn, 12, "v2-app", txn_batch(pid, epoch + 1, 0, [b"three"])) == ErrorCode.NONE
    ended = end_txn(conn, "v2-app", pid, epoch + 1, commit=False, version=5)
    assert ended["error_code"] == ErrorCode.NONE and ended["producer_epoch"] == epoch + 2
    wait_until(lambda: describe(conn, "v2-app")["transaction_state"] == "CompleteAbort", 10, "CompleteAbort")
    read = fetch_committed(conn)
    assert read["aborted_transactions"] == [{"producer_id": pid, "first_offset": 3}]
    assert read["last_stable_offset"] == 5


@pytest.mark.server_args("--transaction-version", "1")
def test_transaction_version_1_keeps_clients_on_the_v1_flow(conn: socket.socket) -> None:
    versions = call(
        conn, 18, 4, {"client_software_name": "apache-kafka-java", "client_software_version": "4.0.0"}
    )
    assert [dict(f) for f in versions["finalized_features"]] == [
        {"name": "transaction.version", "max_version_level": 1, "min_version_level": 1}
    ]
    init = init_pid(conn, "v1-app")
    pid = init["producer_id"]
    # Without V2 a Produce v12 does not add the partition: KIP-890 part 1 refuses it.
    assert produce(conn, 12, "v1-app", txn_batch(pid, 0, 0, [b"x"])) == ErrorCode.TRANSACTION_ABORTABLE


def test_init_producer_id_errors(conn: socket.socket) -> None:
    assert init_pid(conn, "", version=4)["error_code"] == ErrorCode.INVALID_REQUEST
    assert init_pid(conn, "a", timeout_ms=0)["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init_pid(conn, "a", timeout_ms=900_001)["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    first = init_pid(conn, "a", version=4)
    again = init_pid(conn, "a", version=4)  # a restarted producer: same id, the epoch bumped
    assert (again["producer_id"], again["producer_epoch"]) == (
        first["producer_id"],
        first["producer_epoch"] + 1,
    )
    # KIP-360: an expected epoch that is not the current one is fenced (v4+: PRODUCER_FENCED)
    stale = init_pid(
        conn, "a", version=4, producer_id=first["producer_id"], epoch=first["producer_epoch"] + 5
    )
    assert stale["error_code"] == ErrorCode.PRODUCER_FENCED


def test_init_producer_id_while_ongoing_aborts_and_answers_concurrent_transactions(
    conn: socket.socket,
) -> None:
    init = init_pid(conn, "fenced")
    pid, epoch = init["producer_id"], init["producer_epoch"]
    assert add_partitions(conn, "fenced", pid, epoch, [0]) == {0: ErrorCode.NONE}
    assert produce(conn, 9, "fenced", txn_batch(pid, epoch, 0, [b"zombie"])) == ErrorCode.NONE
    assert init_pid(conn, "fenced")["error_code"] == ErrorCode.CONCURRENT_TRANSACTIONS
    retried = wait_until(
        lambda: (r := init_pid(conn, "fenced"))["error_code"] == ErrorCode.NONE and r, 10, "the retried init"
    )
    assert retried["producer_id"] == pid and retried["producer_epoch"] == epoch + 2  # fence, then the init
    # the zombie is fenced everywhere: at the coordinator and on the partition
    assert end_txn(conn, "fenced", pid, epoch, True)["error_code"] == ErrorCode.PRODUCER_FENCED
    assert (
        end_txn(conn, "fenced", pid, epoch, True, version=1)["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
    )
    assert produce(conn, 9, "fenced", txn_batch(pid, epoch, 1, [b"late"])) != ErrorCode.NONE
    read = fetch_committed(conn)
    assert read["aborted_transactions"] == [{"producer_id": pid, "first_offset": 0}]


def test_add_partitions_and_end_txn_errors(conn: socket.socket) -> None:
    assert add_partitions(conn, "nobody", 1, 0, [0]) == {0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    init = init_pid(conn, "e")
    pid, epoch = init["producer_id"], init["producer_epoch"]
    assert add_partitions(conn, "e", pid + 1, epoch, [0]) == {0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert add_partitions(conn, "e", pid, epoch + 1, [0]) == {0: ErrorCode.PRODUCER_FENCED}
    assert add_partitions(conn, "e", pid, epoch + 1, [0], version=1) == {0: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert add_partitions(conn, "e", pid, epoch, [0], topic="missing") == {
        0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    assert end_txn(conn, "e", pid, epoch, True)["error_code"] == ErrorCode.INVALID_TXN_STATE  # Empty
    # KIP-890 part 1: a transactional batch for a partition not in the transaction
    assert produce(conn, 9, "e", txn_batch(pid, epoch, 0, [b"x"])) == ErrorCode.INVALID_TXN_STATE
    assert produce(conn, 11, "e", txn_batch(pid, epoch, 0, [b"x"])) == ErrorCode.TRANSACTION_ABORTABLE
    assert add_partitions(conn, "e", pid, epoch, [0, 1]) == {0: ErrorCode.NONE, 1: ErrorCode.NONE}
    assert produce(conn, 9, "e", txn_batch(pid, epoch, 0, [b"in"])) == ErrorCode.NONE
    # an idempotent (non-transactional) batch of the same producer while its transaction is open
    assert produce(conn, 9, None, txn_batch(pid, epoch, 1, [b"out"], transactional=False)) == (
        ErrorCode.INVALID_TXN_STATE
    )

    # EndTxn pipelined with AddPartitionsToTxn: the add arrives while PrepareCommit is in flight
    end = {"transactional_id": "e", "producer_id": pid, "producer_epoch": epoch, "committed": True}
    add = {
        "v3_and_below_transactional_id": "e",
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
    }
    conn.sendall(encode_request(26, 3, 7, end) + encode_request(24, 3, 8, add))
    assert decode_response(26, 3, read_frame(conn))[1]["error_code"] == ErrorCode.NONE
    added = decode_response(24, 3, read_frame(conn))[1]["results_by_topic_v3_and_below"]
    assert added[0]["results_by_partition"][0]["partition_error_code"] == ErrorCode.CONCURRENT_TRANSACTIONS
    wait_until(lambda: describe(conn, "e")["transaction_state"] == "CompleteCommit", 10, "CompleteCommit")
    assert end_txn(conn, "e", pid, epoch, True)["error_code"] == ErrorCode.NONE  # a retried commit
    assert end_txn(conn, "e", pid, epoch, False)["error_code"] == ErrorCode.INVALID_TXN_STATE
    assert describe(conn, "nobody")["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
