"""A stock transactional producer (confluent-kafka) over SASL PLAIN: one transaction writing COUNT
records over every partition of TOPIC, committed, then a read_committed consumer reading them back.
Run as a subprocess by tests/cluster/test_inter_broker.py. One JSON line per event: {"committed": true},
{"read": N, "values": [...]} or {"error": "..."}.

usage: python -m tests.cluster.secure_txn_worker BOOTSTRAP USER PASSWORD TOPIC TXN_ID GROUP COUNT
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def main(bootstrap: str, user: str, password: str, topic: str, txn_id: str, group: str, count: int) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer

    security = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }
    producer = Producer({**security, "transactional.id": txn_id, "transaction.timeout.ms": 60_000})
    try:
        producer.init_transactions(60)
        producer.begin_transaction()
        for i in range(count):
            producer.produce(topic, value=str(i).encode(), partition=i % 6)
        producer.commit_transaction(60)
    except KafkaException as exc:
        emit(error=str(exc)[:400])
        return
    emit(committed=True)
    consumer = Consumer(
        {**security, "group.id": group, "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    values: list[int] = []
    deadline = time.monotonic() + 60  # bounded: the markers reach every partition's leader well before
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            emit(error=str(message.error())[:400])
            continue
        values.append(int(message.value()))
    consumer.close()
    emit(read=len(values), values=sorted(values))


if __name__ == "__main__":
    bootstrap_, user_, password_, topic_, txn_, group_, count_ = sys.argv[1:8]
    main(bootstrap_, user_, password_, topic_, txn_, group_, int(count_))
