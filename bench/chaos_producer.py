"""The chaos run's idempotent producer (bench/chaos.py): tests/cluster/produce_worker.py's confluent
producer (acks=all, idempotence on), plus librdkafka's `eos` debug log on stderr, so a duplicate can be
traced to what the client did: its InitProducerId answers (producer id and epoch), epoch bumps, drains
and the errors that caused them, each with the batch's base sequence.

One JSON line per event on stdout, as produce_worker: {"acked": N, "p": partition, "o": offset, "t":
unix time}, {"error": "...", "t": ...}, finally {"done": sent}.

usage: python -m bench.chaos_producer BOOTSTRAP TOPIC SECONDS
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Producer


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def main(bootstrap: str, topic: str, seconds: float) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "retry.backoff.ms": 50,
            "topic.metadata.refresh.interval.ms": 1000,
            "message.timeout.ms": 60_000,
            "debug": "eos",  # PID/epoch changes, drains and bumps with the error that caused each
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
