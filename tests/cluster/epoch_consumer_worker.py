"""A stock consumer (confluent-kafka, a classic group, a synchronous commit after every record) that
reads a topic until it has seen EXPECTED distinct records, printing each: run as a subprocess by the
leader-epoch test across a leader change. One JSON line per event on stdout:
{"p": partition, "o": offset, "v": value, "e": leader epoch, "c": committed position of p when read},
{"commit_error": "..."}, {"error": "..."}, finally {"done": distinct records seen}.

usage: python -m tests.cluster.epoch_consumer_worker BOOTSTRAP TOPIC GROUP EXPECTED SECONDS
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def main(bootstrap: str, topic: str, group: str, expected: int, seconds: float) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
            "retry.backoff.ms": 50,
        }
    )
    consumer.subscribe([topic])
    committed: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + seconds
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    emit(error=str(error)[:200])
                continue
            partition, offset, raw = msg.partition(), msg.offset(), msg.value()
            assert partition is not None and offset is not None
            value = raw.decode() if raw is not None else None
            emit(p=partition, o=offset, v=value, e=msg.leader_epoch(), c=committed.get(partition, 0))
            seen.add((partition, offset))
            try:
                consumer.commit(offsets=[TopicPartition(topic, partition, offset + 1)], asynchronous=False)
                committed[partition] = offset + 1
            except KafkaException as exc:  # a coordinator move: retried by the next record's commit
                emit(commit_error=str(exc)[:200])
    finally:
        consumer.close()
    emit(done=len(seen))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
