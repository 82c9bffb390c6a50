"""Transactions with stock clients (issue 24): each client's transactional producer commits, aborts and
is fenced; read_committed consumers of every client never see an aborted record or one past the last
stable offset; a consume-transform-produce loop is exactly-once across kill -9 of itself and of the
server; a transaction left open by a killed producer is aborted at its timeout."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import CLIENTS, create_topic, unique, wait_until
from tests.integration.transactions import Processor, TxnProducer, read_topic
from tests.kcoord_process import KcoordServer

pytestmark = pytest.mark.integration


class Txns:
    """Transactional producer and processor processes of one test; all killed at teardown."""

    def __init__(self, server: KcoordServer, tmp_path: Path) -> None:
        self.server = server
        self.tmp_path = tmp_path
        self.all: list[Any] = []

    def producer(self, client: str, transactional_id: str, **options: Any) -> TxnProducer:
        opts = {
            "client": client,
            "bootstrap": self.server.bootstrap,
            "transactional_id": transactional_id,
            "client_id": f"{client}-txn-{len(self.all) + 1}",
            **options,
        }
        producer = TxnProducer(opts, self.tmp_path / f"txn-{len(self.all) + 1}-{client}.log")
        self.all.append(producer)
        producer.wait_event(lambda e: e["event"] == "started", 30, "the producer to start")
        return producer

    def processor(self, **options: Any) -> Processor:
        opts = {"bootstrap": self.server.bootstrap, **options}
        processor = Processor(opts, self.tmp_path / f"processor-{len(self.all) + 1}.log")
        self.all.append(processor)
        return processor

    def read(self, client: str, topic: str, until: dict[int, int], isolation: str = "read_committed") -> Any:
        log = self.tmp_path / f"reader-{client}-{isolation}-{len(self.all)}.log"
        self.all.append(None)  # numbering only
        return read_topic(client, self.server.bootstrap, topic, until, log, isolation)

    def cleanup(self) -> None:
        for process in self.all:
            if process is not None:
                process.cleanup()


@pytest.fixture
def txns(server: KcoordServer, tmp_path: Path) -> Iterator[Txns]:
    factory = Txns(server, tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark (its log end: data and markers), from ListOffsets."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("watermarks")})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def _values(records: list[tuple[int, int, str]]) -> list[str]:
    return sorted(v for _, _, v in records)


@pytest.mark.parametrize("client", CLIENTS)
def test_committed_records_are_read_once_aborted_and_open_ones_never(
    client: str, server: KcoordServer, txns: Txns
) -> None:
    topic = unique("txn")
    create_topic(server.bootstrap, topic, 2)
    producer = txns.producer(client, unique("tid"))
    producer.ok("init")
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["c1", "c2", "c3"])
    producer.ok("send", topic=topic, partition=1, values=["c4", "c5"])
    producer.ok("commit")
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["a1", "a2"])
    producer.ok("send", topic=topic, partition=1, values=["a3"])
    producer.ok("abort")
    producer.ok("begin")
    producer.ok("commit")  # an empty transaction
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["c6"])
    producer.ok("commit")
    producer.ok("begin")
    open_offset = producer.ok("send", topic=topic, partition=1, values=["open1"])["offsets"][0]
    ends = end_offsets(server.bootstrap, topic, 2)
    committed = ["c1", "c2", "c3", "c4", "c5", "c6"]

    # The last stable offset of partition 1 stops at the open transaction's first record.
    for reader in CLIENTS:
        records, reached = txns.read(reader, topic, {0: ends[0], 1: open_offset})
        assert reached, f"{reader} read_committed did not reach the last stable offsets"
        assert _values(records) == committed, f"{reader} read_committed"
    records, reached = txns.read(client, topic, ends, isolation="read_uncommitted")
    assert reached and {"a1", "a2", "a3", "open1"} <= set(_values(records))  # the test can see them

    producer.ok("commit")
    ends = end_offsets(server.bootstrap, topic, 2)
    records, reached = txns.read(client, topic, ends)
    assert reached and _values(records) == sorted([*committed, "open1"])
    producer.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_instance_fences_the_first_and_aborts_its_transaction(
    client: str, server: KcoordServer, txns: Txns
) -> None:
    topic = unique("fence")
    create_topic(server.bootstrap, topic, 1)
    transactional_id = unique("tid")
    zombie = txns.producer(client, transactional_id)
    zombie.ok("init")
    zombie.ok("begin")
    zombie.ok("send", topic=topic, partition=0, values=["zombie1"])

    successor = txns.producer(client, transactional_id)
    successor.ok("init")  # bumps the epoch: the zombie's open transaction is aborted
    answer = zombie.call("commit")
    assert answer["event"] == "failed", f"the fenced producer committed: {answer}"
    successor.ok("begin")
    successor.ok("send", topic=topic, partition=0, values=["s1"])
    successor.ok("commit")

    ends = end_offsets(server.bootstrap, topic, 1)
    records, reached = txns.read(client, topic, ends)
    assert reached and _values(records) == ["s1"]
    successor.close()


@pytest.mark.server_args("--transaction-abort-timed-out-transaction-cleanup-interval-ms", "200")
def test_a_killed_producers_transaction_is_aborted_at_its_timeout(server: KcoordServer, txns: Txns) -> None:
    topic = unique("timeout")
    create_topic(server.bootstrap, topic, 1)
    producer = txns.producer("kafka-python", unique("tid"), transaction_timeout_ms=1500)
    producer.ok("init")
    producer.ok("begin")
    producer.ok("send", topic=topic, partition=0, values=["lost1", "lost2"])
    producer.kill()

    other = txns.producer("confluent-kafka", unique("tid"))
    other.ok("init")
    other.ok("begin")
    other.ok("send", topic=topic, partition=0, values=["after"])
    other.ok("commit")
    # The LSO is held by the killed producer's transaction until the coordinator aborts it.
    ends = wait_until(
        lambda: (e := end_offsets(server.bootstrap, topic, 1))[0] >= 5 and e,  # 2 + marker + 1 + marker
        30,
        "the abort marker",
    )
    records, reached = txns.read("confluent-kafka", topic, ends)
    assert reached and _values(records) == ["after"]
    other.close()


def _produce_input(bootstrap: str, topic: str, count: int) -> list[str]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    sent = [f"v{i}" for i in range(count)]
    for i, value in enumerate(sent):
        producer.produce(topic, value.encode(), key=f"k{i}".encode(), partition=i % 3)
    assert producer.flush(60) == 0
    return sent


def _group_caught_up(bootstrap: str, group: str, topic: str, ends: dict[int, int]) -> bool:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in ends], timeout=15)
        return all(tp.offset >= ends[tp.partition] for tp in committed)
    finally:
        consumer.close()


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_consume_transform_produce_is_exactly_once_across_kill_9_of_processor_and_server(
    group_protocol: str, server: KcoordServer, txns: Txns
) -> None:
    source, sink, group = unique("in"), unique("out"), unique("etl")
    create_topic(server.bootstrap, source, 3)
    create_topic(server.bootstrap, sink, 3)
    inputs = _produce_input(server.bootstrap, source, 300)
    input_ends = end_offsets(server.bootstrap, source, 3)
    options = {
        "group": group,
        "input": source,
        "output": sink,
        "transactional_id": unique("etl-tid"),
        "group_protocol": group_protocol,
        "batch": 20,
        "hold_ms": 150,
    }

    first = txns.processor(**options, client_id="etl-1")
    first.wait_event(lambda e: e["event"] == "txn_committed", 60, "a first committed transaction")
    mark = len(first.events)
    first.wait_event(lambda e: e["event"] == "in_txn", 30, "an open transaction", after=mark)
    first.kill()  # kill -9 with a transaction open: its records and offsets must never count

    second = txns.processor(**options, client_id="etl-2")
    second.wait_event(lambda e: e["event"] == "txn_committed", 60, "the successor's first commit")
    mark = len(second.events)
    second.wait_event(lambda e: e["event"] == "in_txn", 30, "an open transaction", after=mark)
    server.kill()  # kill -9 of the server with a transaction open
    server.restart()

    processors = [second]

    def caught_up() -> bool:
        if not processors[-1].alive():  # a fatal error after the restart: a new instance takes over
            processors.append(txns.processor(**options, client_id=f"etl-{len(processors) + 2}"))
        return _group_caught_up(server.bootstrap, group, source, input_ends)

    wait_until(caught_up, 180, "the processor to consume every input record", interval=1.0)
    processors[-1].kill()

    ends = end_offsets(server.bootstrap, sink, 3)
    records, reached = txns.read("confluent-kafka", sink, ends)
    assert reached
    counts = collections.Counter(v for _, _, v in records)
    duplicates = [v for v, n in counts.items() if n > 1]
    assert not duplicates, f"{len(duplicates)} records written twice, e.g. {duplicates[:5]}"
    assert sorted(counts) == sorted(f"out:{v}" for v in inputs)
