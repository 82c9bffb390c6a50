"""A consume-transform-produce loop (confluent-kafka) committing its input offsets in its transactions.

    python -m tests.integration.workers.txn_processor '<json options>'

Options: bootstrap, group, input, output, transactional_id, group_protocol (classic | consumer),
batch (records per transaction, default 20), hold_ms (how long each transaction stays open after its
records were produced and before it commits, default 0), client_id.

Each input record (value v) becomes one output record "out:v" on the same partition. The input offsets
go into the same transaction (send_offsets_to_transaction with the consumer's group metadata), so
a crash of the processor or of the server at any point loses nothing and duplicates nothing: the
pattern of Kafka's and librdkafka's exactly-once examples (abort and rewind on an abortable error,
a fresh producer after a fatal one).

Events: {"event": "in_txn", "records": N} once a transaction's records are produced and its offsets
sent (the window in which a test kills a process), {"event": "txn_committed", "records": N},
{"event": "txn_aborted", "error": ...}, {"event": "idle"} after an empty poll.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.integration.workers.common import emit


def _consumer(o: dict[str, Any]) -> Consumer:
    settings: dict[str, Any] = {
        "bootstrap.servers": o["bootstrap"],
        "group.id": o["group"],
        "client.id": o.get("client_id", "processor"),
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }
    if o.get("group_protocol", "classic") == "consumer":
        settings["group.protocol"] = "consumer"
    else:
        settings.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    return Consumer(settings)


def _producer(o: dict[str, Any]) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": o["bootstrap"],
            "transactional.id": o["transactional_id"],
            "client.id": o.get("client_id", "processor"),
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
            # librdkafka 2.16's re-bootstrap (KIP-899), triggered when every broker is down (a kill -9 of
            # the one server), terminates the broker handle its group-coordinator cache still names, so
            # send_offsets_to_transaction waits forever for a TxnOffsetCommit it never sends
            # (tests/integration/FINDINGS.md). Off, the client reconnects to the same handle.
            "metadata.recovery.strategy": "none",
            **({"debug": o["debug"]} if o.get("debug") else {}),
        }
    )
    producer.init_transactions(60)
    return producer


def _rewind(consumer: Consumer) -> None:
    """After an abort: back to the committed offsets (what the aborted transaction did not commit)."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, 30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def _transact(o: dict[str, Any], consumer: Consumer, producer: Producer, messages: list[Any]) -> None:
    producer.begin_transaction()
    for m in messages:
        producer.produce(o["output"], b"out:" + m.value(), key=m.key(), partition=m.partition())
    positions: dict[tuple[str, int], int] = {}
    for m in messages:
        positions[(m.topic(), m.partition())] = m.offset() + 1
    offsets = [TopicPartition(t, p, off) for (t, p), off in positions.items()]
    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 60)
    emit("in_txn", records=len(messages))
    if o.get("hold_ms", 0):
        time.sleep(o["hold_ms"] / 1000)
    producer.commit_transaction(60)
    emit("txn_committed", records=len(messages))


def main() -> None:
    o = json.loads(sys.argv[1])
    consumer = _consumer(o)
    consumer.subscribe([o["input"]])
    producer = _producer(o)
    emit("started")
    while True:
        messages = [m for m in consumer.consume(o.get("batch", 20), 0.5) if m.error() is None]
        if not messages:
            emit("idle")
            continue
        try:
            _transact(o, consumer, producer, messages)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.txn_requires_abort():
                producer.abort_transaction(60)
                emit("txn_aborted", error=str(error))
                _rewind(consumer)
            elif error.retriable():
                emit("txn_retry", error=str(error))
                producer.commit_transaction(60)
                emit("txn_committed", records=len(messages))
            else:  # fatal (e.g. fenced): let the test start a new processor
                emit("fatal", error=str(error))
                sys.exit(3)


if __name__ == "__main__":
    main()
