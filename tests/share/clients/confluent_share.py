"""confluent-kafka (librdkafka 2.16) for tests/share: its `ShareConsumer` and its producer, in a process
of their own. Every fact is one JSON line on stdout (read by tests/share/drivers.py).

usage: python -m tests.share.clients.confluent_share '{"mode": ..., ...}'
  consume: {"bootstrap", "group", "topic", "policy"}; the policies of ShareDriver.java (implicit, accept,
           release, reject, release-once, hold); runs until a line "stop" or the end of stdin.
  produce: {"bootstrap", "topic", "values": [...], "abort": [...]}; `values` committed (in one
           transaction when `abort` is given), `abort` written in a transaction that is aborted first.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

ACKS = {
    "accept": AcknowledgeType.ACCEPT,
    "release": AcknowledgeType.RELEASE,
    "reject": AcknowledgeType.REJECT,
}


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def _stop_on_stdin() -> threading.Event:
    stop = threading.Event()

    def read() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=read, daemon=True).start()
    return stop


def _choose(policy: str, delivery: int) -> Any:
    if policy == "release-once":
        return AcknowledgeType.RELEASE if delivery <= 1 else AcknowledgeType.ACCEPT
    return ACKS.get(policy)


def consume(bootstrap: str, group: str, topic: str, policy: str) -> None:
    mode = "implicit" if policy == "implicit" else "explicit"
    config = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    stop = _stop_on_stdin()
    consumer = ShareConsumer(config)
    consumer.subscribe([topic])
    emit(event="subscribed")
    held = False
    while not stop.is_set():
        if held:  # a member holding its records polls no more (explicit mode forbids it anyway)
            stop.wait(0.05)
            continue
        polled = [m for m in consumer.poll(0.2) if m.error() is None]
        for message in polled:
            delivery = message.delivery_count() or -1
            ack = _choose(policy, delivery)
            raw = message.value()
            value = raw.decode() if isinstance(raw, bytes) else None
            ack_name = policy if ack is None else ack.name
            emit(event="record", ms=int(time.time() * 1000), partition=message.partition(),
                 offset=message.offset(), delivery=delivery, value=value, ack=ack_name)  # fmt: skip
            if ack is not None:
                consumer.acknowledge(message, ack)
        held = bool(polled) and policy == "hold"
        if polled and not held:
            consumer.commit_sync(30)
            emit(event="committed", errors=[])
    emit(event="closing")
    consumer.close()
    emit(event="closed")


def produce(bootstrap: str, topic: str, values: list[str], abort: list[str]) -> None:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0}
    if abort:
        config["transactional.id"] = f"share-producer-{topic}-{time.monotonic_ns()}"
    producer = Producer(config)
    if abort:
        producer.init_transactions(30)
        producer.begin_transaction()
        for value in abort:
            producer.produce(topic, value=value.encode(), partition=0)
        producer.flush(30)
        producer.abort_transaction(30)
        producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    if abort:
        producer.commit_transaction(30)
    assert producer.flush(30) == 0, "records left unsent"
    emit(event="produced", count=len(values), aborted=len(abort))


def main(options: dict[str, Any]) -> None:
    if options["mode"] == "consume":
        consume(options["bootstrap"], options["group"], options["topic"], options["policy"])
    else:
        produce(options["bootstrap"], options["topic"], options["values"], options.get("abort", []))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
