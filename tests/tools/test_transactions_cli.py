"""`kcoord transactions` (the real CLI, in its own process) against a real `kcoord serve`.

Transactions are driven step by step on raw sockets (InitProducerId, AddPartitionsToTxn, a
transactional batch built by kafka-python's own DefaultRecordBatchBuilder, EndTxn), so every state the
tool reports is one the test put there; what the tool reports is checked against kafka-python's
KafkaAdminClient (list_transactions, describe_transactions, describe_producers) and against the
partition afterwards (DescribeProducers, the last stable offset, read_committed Fetch).

A hanging transaction is made the way Kafka made them before KIP-890's verification: a transactional
batch the coordinator never heard of, accepted because the server runs with
`--transaction-partition-verification-enable false` (Kafka's transaction.partition.verification.enable).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.protocol.errors import ErrorCode
from tests.integration.conftest import unique, wait_until
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer
from tests.server import wire
from tests.server.wire import call, connect
from tests.tools.test_groups_cli import table

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PRODUCE_V, FETCH_V, LIST_OFFSETS_V = 9, 12, 7
INIT_PRODUCER_ID_V, ADD_PARTITIONS_V, END_TXN_V, FIND_COORDINATOR_V = 4, 3, 3, 4
MINUTE_MS = 60_000
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
RETRIABLE = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


def transactions(server: KcoordServer | str, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = server if isinstance(server, str) else server.bootstrap
    return run_command(
        [sys.executable, "-m", "kcoord", "transactions", "--bootstrap-server", bootstrap, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def transactions_ok(server: KcoordServer, *args: str) -> str:
    result = transactions(server, *args)
    assert result.returncode == 0, f"kcoord transactions {args} failed ({result.returncode}): {result.stderr}"
    assert "Traceback" not in result.stderr
    return result.stdout


def transactions_json(server: KcoordServer, *args: str) -> Any:
    return json.loads(transactions_ok(server, *args, "--output", "json"))


def now_ms() -> int:
    return int(time.time() * 1000)


# -- the wire, step by step -----------------------------------------------------------------------------


def retried(
    sock: socket.socket, api_key: int, version: int, body: dict[str, Any], error: Any
) -> dict[str, Any]:
    """`call` again while `error(response)` is retriable (a transition in flight, a loading coordinator)."""
    answer: dict[str, Any] = {}

    def attempt() -> bool:
        answer.update(call(sock, api_key, version, body))
        return error(answer) not in RETRIABLE

    wait_until(attempt, 30, f"api {api_key} to stop answering a retriable error", interval=0.1)
    return answer


def produce(
    sock: socket.socket, topic: str, partition: int, records: bytes, transactional_id: str | None
) -> int:
    body = {
        "transactional_id": transactional_id,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }
    answer = call(sock, 0, PRODUCE_V, body)["responses"][0]["partition_responses"][0]
    assert answer["error_code"] == ErrorCode.NONE, answer
    return int(answer["base_offset"])


def batch(count: int, timestamp: int, producer: tuple[int, int, int] = (-1, -1, -1)) -> bytes:
    """`count` records; transactional when `producer` (id, epoch, first sequence) is given."""
    transactional = producer[0] >= 0
    builder = DefaultRecordBatchBuilder(2, 0, transactional, *producer, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp, f"k{i}".encode(), f"v{i}".encode(), [])
    return bytes(builder.build())


class Transaction:
    """One transactional producer on a raw socket, the transactions V1 flow."""

    def __init__(self, sock: socket.socket, transactional_id: str, timeout_ms: int = 60_000) -> None:
        self.sock = sock
        self.transactional_id = transactional_id
        body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms}
        answer = retried(sock, 22, INIT_PRODUCER_ID_V, body, lambda a: a["error_code"])
        assert answer["error_code"] == ErrorCode.NONE, answer
        self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]
        self.sequences: dict[tuple[str, int], int] = {}

    def add(self, topic: str, partitions: list[int]) -> None:
        body = {
            "v3_and_below_transactional_id": self.transactional_id,
            "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
        }

        def first_error(answer: dict[str, Any]) -> int:
            results = answer["results_by_topic_v3_and_below"][0]["results_by_partition"]
            return max((int(r["partition_error_code"]) for r in results), key=abs)

        answer = retried(self.sock, 24, ADD_PARTITIONS_V, body, first_error)
        assert first_error(answer) == ErrorCode.NONE, answer

    def produce(self, topic: str, partition: int, count: int, timestamp: int) -> int:
        sequence = self.sequences.get((topic, partition), 0)
        records = batch(count, timestamp, (self.producer_id, self.epoch, sequence))
        self.sequences[topic, partition] = sequence + count
        return produce(self.sock, topic, partition, records, self.transactional_id)

    def end(self, commit: bool) -> None:
        body = {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "committed": commit,
        }
        answer = retried(self.sock, 26, END_TXN_V, body, lambda a: a["error_code"])
        assert answer["error_code"] == ErrorCode.NONE, answer


def create_topic(sock: socket.socket, name: str, partitions: int) -> None:
    answer = wire.create_topic(sock, name, partitions)
    assert answer["error_code"] == ErrorCode.NONE, answer


def transaction_coordinator(sock: socket.socket, transactional_id: str) -> int:
    body = {"key_type": 1, "coordinator_keys": [transactional_id]}
    [found] = call(sock, 10, FIND_COORDINATOR_V, body)["coordinators"]
    assert found["error_code"] == ErrorCode.NONE, found
    return int(found["node_id"])


def latest(sock: socket.socket, topic: str, partition: int, isolation_level: int) -> int:
    body = {
        "replica_id": -1,
        "isolation_level": isolation_level,
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
    }
    answer = call(sock, 2, LIST_OFFSETS_V, body)["topics"][0]["partitions"][0]
    assert answer["error_code"] == ErrorCode.NONE, answer
    return int(answer["offset"])


def aborted_transactions(sock: socket.socket, topic: str, partition: int) -> list[tuple[int, int]]:
    """A read_committed Fetch from offset 0: the aborted transactions the partition reports."""
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": READ_COMMITTED,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
    }
    answer = call(sock, 1, FETCH_V, body)["responses"][0]["partitions"][0]
    assert answer["error_code"] == ErrorCode.NONE, answer
    return [(a["producer_id"], a["first_offset"]) for a in answer["aborted_transactions"] or []]


def kafka_python_admin(server: KcoordServer) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=server.bootstrap)


# -- the tests ------------------------------------------------------------------------------------------


def test_list_describe_and_describe_producers_of_an_open_then_committed_transaction(
    server: KcoordServer,
) -> None:
    sock = connect(server.address)
    topic = unique("txn")
    create_topic(sock, topic, 2)
    produce(sock, topic, 0, batch(2, now_ms()), None)  # the transaction starts at offset 2, not 0
    before = now_ms()
    txn = Transaction(sock, unique("tx"))
    txn.add(topic, [0, 1])
    last_write = now_ms() - 1000
    start = txn.produce(topic, 0, 3, last_write)
    txn.produce(topic, 1, 1, last_write)
    after = now_ms()
    coordinator = transaction_coordinator(sock, txn.transactional_id)
    assert start == 2

    mine = {
        "transactional_id": txn.transactional_id,
        "coordinator": coordinator,
        "producer_id": txn.producer_id,
        "transaction_state": "Ongoing",
    }
    assert mine in transactions_json(server, "--list")
    rows = {row["TransactionalId"]: row for row in table(transactions_ok(server, "--list"))}
    assert rows[txn.transactional_id] == {
        "TransactionalId": txn.transactional_id,
        "Coordinator": str(coordinator),
        "ProducerId": str(txn.producer_id),
        "TransactionState": "Ongoing",
    }
    assert transactions_json(server, "--list", "--producer-id-filter", str(txn.producer_id)) == [mine]
    assert mine in transactions_json(server, "--list", "--state", "Ongoing")
    assert mine not in transactions_json(server, "--list", "--state", "CompleteCommit,Empty")
    assert mine not in transactions_json(server, "--list", "--duration-filter", str(3_600_000))
    unknown = transactions(server, "--list", "--state", "Ongoing,Sleeping")
    assert unknown.returncode == 0 and "unknown transaction states ignored: Sleeping" in unknown.stderr

    described = transactions_json(server, "--describe", "--transactional-id", txn.transactional_id)
    assert {
        k: described[k] for k in ("coordinator_id", "producer_id", "producer_epoch", "transaction_state")
    } == {
        "coordinator_id": coordinator,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "transaction_state": "Ongoing",
    }
    assert described["transaction_timeout_ms"] == 60_000
    assert before <= described["current_transaction_start_time_ms"] <= after
    assert described["transaction_duration_ms"] >= 0
    assert described["topic_partitions"] == [
        {"topic": topic, "partition": 0},
        {"topic": topic, "partition": 1},
    ]
    [row] = table(transactions_ok(server, "--describe", "--transactional-id", txn.transactional_id))
    assert row["TopicPartitions"] == f"{topic}-0,{topic}-1" and row["TransactionState"] == "Ongoing"

    [producer] = transactions_json(server, "--describe-producers", "--topic", topic, "--partition", "0")
    assert producer == {
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "latest_coordinator_epoch": -1,  # no marker written for it yet
        "last_sequence": 2,
        "last_timestamp": last_write,
        "current_transaction_start_offset": 2,
    }

    from kafka import TopicPartition

    admin = kafka_python_admin(server)
    try:
        listed = {t.transactional_id: t for ts in admin.list_transactions().values() for t in ts}
        assert listed[txn.transactional_id].producer_id == txn.producer_id
        kp = admin.describe_transactions([txn.transactional_id])[txn.transactional_id]
        assert (kp.coordinator_id, kp.producer_epoch) == (coordinator, txn.epoch)
        assert kp.transaction_start_time_ms == described["current_transaction_start_time_ms"]
        [kp_producer] = admin.describe_producers([TopicPartition(topic, 0)])[
            TopicPartition(topic, 0)
        ].active_producers
        assert (kp_producer.producer_id, kp_producer.current_transaction_start_offset) == (txn.producer_id, 2)
    finally:
        admin.close()

    txn.end(commit=True)

    def complete() -> Any:
        d = transactions_json(server, "--describe", "--transactional-id", txn.transactional_id)
        return d if d["transaction_state"] == "CompleteCommit" else None

    done = wait_until(complete, 30, "the transaction to complete its commit", interval=0.2)
    assert done["topic_partitions"] == []
    [closed] = transactions_json(server, "--describe-producers", "--topic", topic, "--partition", "0")
    assert closed["current_transaction_start_offset"] is None
    assert closed["latest_coordinator_epoch"] >= 0
    text = transactions_ok(server, "--describe-producers", "--topic", topic, "--partition", "1")
    assert table(text)[0]["CurrentTransactionStartOffset"] == "None"


def test_find_hanging_skips_an_open_transaction_its_coordinator_still_has(server: KcoordServer) -> None:
    sock = connect(server.address)
    topic = unique("txn")
    create_topic(sock, topic, 2)
    txn = Transaction(sock, unique("tx"))
    txn.add(topic, [0])
    txn.produce(topic, 0, 2, now_ms() - 5 * MINUTE_MS)  # a candidate: older than a 1-minute timeout
    assert (
        transactions_json(server, "--find-hanging", "--topic", topic, "--max-transaction-timeout", "1") == []
    )
    assert transactions_json(server, "--find-hanging", "--max-transaction-timeout", "1") == []
    text = transactions_ok(
        server, "--find-hanging", "--topic", topic, "--partition", "0", "--max-transaction-timeout", "1"
    )
    assert text.split() == [
        "Topic",
        "Partition",
        "ProducerId",
        "ProducerEpoch",
        "CoordinatorEpoch",
        "StartOffset",
        "LastTimestamp",
        "Duration(min)",
    ]


@pytest.mark.server_args("--transaction-partition-verification-enable", "false")
def test_a_hanging_transaction_is_found_and_aborted(server: KcoordServer) -> None:
    sock = connect(server.address)
    topic = unique("txn")
    create_topic(sock, topic, 3)
    idempotent = call(
        sock, 22, INIT_PRODUCER_ID_V, {"transactional_id": None, "transaction_timeout_ms": 60000}
    )
    assert idempotent["error_code"] == ErrorCode.NONE, idempotent
    ghost = idempotent["producer_id"]  # a real producer id, in no transaction the coordinator knows
    last_write = now_ms() - 30 * MINUTE_MS
    produce(sock, topic, 0, batch(1, now_ms()), None)
    starts = {p: produce(sock, topic, p, batch(2, last_write, (ghost, 0, 0)), "ghost") for p in (0, 1)}
    live = Transaction(sock, unique("tx"))  # open too, but its coordinator knows it: not hanging
    live.add(topic, [2])
    live.produce(topic, 2, 1, last_write)
    assert starts == {0: 1, 1: 0}
    assert latest(sock, topic, 0, READ_COMMITTED) == 1  # the last stable offset waits at the open one

    hanging = transactions_json(server, "--find-hanging", "--topic", topic)
    assert [(h["partition"], h["producer_id"], h["start_offset"]) for h in hanging] == [
        (0, ghost, 1),
        (1, ghost, 0),
    ]
    assert hanging[0] == {
        "topic": topic,
        "partition": 0,
        "producer_id": ghost,
        "producer_epoch": 0,
        "coordinator_epoch": -1,
        "start_offset": 1,
        "last_timestamp": last_write,
        "duration_min": hanging[0]["duration_min"],
    }
    assert 30 <= hanging[0]["duration_min"] <= 31
    only = transactions_json(server, "--find-hanging", "--topic", topic, "--partition", "1")
    assert [h["partition"] for h in only] == [1]
    assert (
        transactions_json(server, "--find-hanging", "--topic", topic, "--max-transaction-timeout", "60") == []
    )

    aborted = transactions_ok(server, "--abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
    assert aborted.strip() == (
        f"Aborted AbortTransactionSpec(topicPartition={topic}-0, producerId={ghost}, producerEpoch=0, "
        "coordinatorEpoch=0)"
    )
    by_id = transactions_json(
        server,
        "--abort",
        "--topic",
        topic,
        "--partition",
        "1",
        "--producer-id",
        str(ghost),
        "--producer-epoch",
        "0",
        "--coordinator-epoch",
        "-1",  # as DescribeProducers shows it before any marker: sent as 0
    )
    assert by_id == {
        "topic": topic,
        "partition": 1,
        "producer_id": ghost,
        "producer_epoch": 0,
        "coordinator_epoch": 0,
    }

    assert transactions_json(server, "--find-hanging", "--topic", topic) == []
    for partition, start in starts.items():
        [state] = transactions_json(
            server, "--describe-producers", "--topic", topic, "--partition", str(partition)
        )
        assert (state["current_transaction_start_offset"], state["latest_coordinator_epoch"]) == (None, 0)
        end = latest(sock, topic, partition, READ_UNCOMMITTED)
        assert (
            latest(sock, topic, partition, READ_COMMITTED) == end == start + 3
        )  # two records and the marker
        assert aborted_transactions(sock, topic, partition) == [(ghost, start)]
    again = transactions(server, "--abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
    assert again.returncode == 1
    message = f"Could not find any open transactions starting at offset 1 on partition {topic}-0"
    assert again.stderr == f"kcoord transactions: {message}\n"


def test_errors_against_a_running_server_are_one_line(server: KcoordServer) -> None:
    sock = connect(server.address)
    topic = unique("txn")
    create_topic(sock, topic, 1)
    assert transactions_json(server, "--list") == []
    assert transactions_ok(server, "--list").split() == [
        "TransactionalId",
        "Coordinator",
        "ProducerId",
        "TransactionState",
    ]
    cases = {
        ("--describe", "--transactional-id", "no-such-id"): "TRANSACTIONAL_ID_NOT_FOUND",
        ("--describe-producers", "--topic", "no-such-topic", "--partition", "0"): (
            "topic 'no-such-topic': UNKNOWN_TOPIC_OR_PARTITION"
        ),
        ("--describe-producers", "--topic", topic, "--partition", "7"): f"partition {topic}-7: UNKNOWN_TOPIC",
        ("--find-hanging", "--topic", "no-such-topic"): "topic 'no-such-topic': UNKNOWN_TOPIC_OR_PARTITION",
        ("--abort", "--topic", topic, "--partition", "0", "--start-offset", "5"): (
            f"Could not find any open transactions starting at offset 5 on partition {topic}-0"
        ),
    }
    for args, message in cases.items():
        result = transactions(server, *args)
        assert result.returncode == 1, (args, result)
        assert result.stdout == "", (args, result.stdout)
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr, (args, result.stderr)
        assert result.stderr.startswith("kcoord transactions: ")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--list",), 1, "cannot connect to 127.0.0.1:{port}"),
        (("--describe",), 2, "Option --describe requires --transactional-id"),
        (("--abort", "--topic", "t", "--partition", "0"), 2, "must be identified either with --start-offset"),
        (
            ("--find-hanging", "--partition", "0"),
            2,
            "The --partition argument requires --topic to be provided",
        ),
    ],
)
def test_bad_usage_and_unreachable_servers_are_one_line_errors(
    args: tuple[str, ...], code: int, message: str
) -> None:
    port = _closed_port()
    result = transactions(f"127.0.0.1:{port}", *args)
    assert result.returncode == code
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("kcoord transactions: ")
    assert message.format(port=port) in result.stderr
