"""A consumer of one client library that reads a topic's partitions from the beginning, without a group,
under an isolation level, until its position reaches a given offset on every partition.

    python -m tests.integration.workers.txn_reader '<json options>'

Options: client (kafka-python | confluent-kafka | aiokafka), bootstrap, topic, isolation
(read_committed | read_uncommitted), until ({"<partition>": offset, ...}: read until the consumer's
position is at least this), timeout_s (default 60).

It reports {"event": "records", "records": [[partition, offset, value], ...]} and then
{"event": "finished", "positions": {"<partition>": position}, "reached": bool}. A read_committed
consumer's position passes aborted records and control batches without returning them, so reaching
the log end proves the last stable offset got there.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from tests.integration.workers.common import emit

Row = list[Any]


def read_confluent(
    o: dict[str, Any], until: dict[int, int], deadline: float
) -> tuple[list[Row], dict[int, int]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": o["bootstrap"],
            "group.id": f"reader-{time.monotonic_ns()}",  # never joins: assign() only
            "isolation.level": o["isolation"],
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(o["topic"], p, OFFSET_BEGINNING) for p in until])
    rows: list[Row] = []
    positions: dict[int, int] = {}
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                rows.append([message.partition(), message.offset(), message.value().decode()])
            tps = consumer.position([TopicPartition(o["topic"], p) for p in until])
            positions = {tp.partition: tp.offset for tp in tps}
            if all(positions.get(p, -1) >= end for p, end in until.items()):
                break
    finally:
        consumer.close()
    return rows, positions


def read_kafka_python(
    o: dict[str, Any], until: dict[int, int], deadline: float
) -> tuple[list[Row], dict[int, int]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=o["bootstrap"],
        isolation_level=o["isolation"],
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    tps = [TopicPartition(o["topic"], p) for p in until]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    rows: list[Row] = []
    positions: dict[int, int] = {}
    try:
        while time.monotonic() < deadline:
            for tp, messages in consumer.poll(200).items():
                rows.extend([tp.partition, m.offset, m.value.decode()] for m in messages)
            positions = {tp.partition: consumer.position(tp) for tp in tps}
            if all(positions[p] >= end for p, end in until.items()):
                break
    finally:
        consumer.close()
    return rows, positions


async def _read_aiokafka(
    o: dict[str, Any], until: dict[int, int], deadline: float
) -> tuple[list[Row], dict[int, int]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=o["bootstrap"],
        isolation_level=o["isolation"],
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    tps = [TopicPartition(o["topic"], p) for p in until]
    consumer.assign(tps)
    await consumer.seek_to_beginning()
    rows: list[Row] = []
    positions: dict[int, int] = {}
    try:
        while time.monotonic() < deadline:
            for tp, messages in (await consumer.getmany(timeout_ms=200)).items():
                rows.extend([tp.partition, m.offset, m.value.decode()] for m in messages)
            positions = {tp.partition: await consumer.position(tp) for tp in tps}
            if all(positions[p] >= end for p, end in until.items()):
                break
    finally:
        await consumer.stop()
    return rows, positions


def read_aiokafka(
    o: dict[str, Any], until: dict[int, int], deadline: float
) -> tuple[list[Row], dict[int, int]]:
    return asyncio.run(_read_aiokafka(o, until, deadline))


READERS = {"confluent-kafka": read_confluent, "kafka-python": read_kafka_python, "aiokafka": read_aiokafka}


def main() -> None:
    options = json.loads(sys.argv[1])
    until = {int(p): int(end) for p, end in options["until"].items()}
    deadline = time.monotonic() + float(options.get("timeout_s", 60))
    rows, positions = READERS[options["client"]](options, until, deadline)
    emit("records", records=rows)
    reached = all(positions.get(p, -1) >= end for p, end in until.items())
    emit("finished", positions={str(p): o for p, o in positions.items()}, reached=reached)


if __name__ == "__main__":
    main()
