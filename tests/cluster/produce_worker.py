"""A stock producer (acks=all, idempotent) that keeps producing numbered records and prints every
acknowledged one: run as a subprocess by the cluster partition tests. One JSON line per event:
{"acked": N, "p": partition, "o": offset, "t": unix time}, {"error": "...", "t": ...}, finally
{"done": sent}.

usage: python -m tests.cluster.produce_worker LIB BOOTSTRAP TOPIC SECONDS
LIB: confluent | kafka-python.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def confluent(bootstrap: str, topic: str, seconds: float) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "retry.backoff.ms": 50,
            "topic.metadata.refresh.interval.ms": 1000,
            "message.timeout.ms": 60_000,
        }
    )

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            emit(error=str(err)[:200], t=time.time())
        else:
            emit(acked=int(msg.value()), p=msg.partition(), o=msg.offset(), t=time.time())

    end, sent = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        producer.produce(topic, value=str(sent).encode(), key=str(sent).encode(), on_delivery=delivered)
        sent += 1
        producer.poll(0.002)
    producer.flush(90)
    emit(done=sent)


def kafka_python(bootstrap: str, topic: str, seconds: float) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","), acks="all", retries=100, retry_backoff_ms=50,
        request_timeout_ms=5000, metadata_max_age_ms=1000, linger_ms=5,
    )  # fmt: skip
    end, sent = time.monotonic() + seconds, 0
    pending = []
    while time.monotonic() < end:
        pending.append((sent, producer.send(topic, value=str(sent).encode(), key=str(sent).encode())))
        sent += 1
        time.sleep(0.002)
    producer.flush(90)
    for value, future in pending:
        try:
            meta = future.get(timeout=1)
            emit(acked=value, p=meta.partition, o=meta.offset, t=time.time())
        except Exception as exc:
            emit(error=repr(exc)[:200], t=time.time())
    emit(done=sent)


if __name__ == "__main__":
    lib, bootstrap, topic, seconds = sys.argv[1:5]
    {"confluent": confluent, "kafka-python": kafka_python}[lib](bootstrap, topic, float(seconds))
