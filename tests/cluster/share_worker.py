"""A confluent-kafka `ShareConsumer` (explicit acknowledgement) for the cluster share tests, a process of
its own: every record delivered and every acknowledgement the cluster confirmed are JSON lines on stdout
(tests/cluster/events_worker.py reads them once it exits).

usage: python -m tests.cluster.share_worker BOOTSTRAP GROUP TOPIC SECONDS STOP_FILE
  Runs until STOP_FILE exists or SECONDS passed. Each record is accepted; `commit_sync` sends the
  acknowledgements, and an "acked" line lists those the cluster answered without error (a failed one,
  e.g. its leader died meanwhile, is listed in "ack_failed": its record may come back, as with Kafka).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def _confirm(consumer: ShareConsumer, polled: list[tuple[int, int]]) -> None:
    try:
        results = consumer.commit_sync(15)
    except KafkaException as exc:
        emit(event="ack_failed", records=polled, error=str(exc), ms=time.time() * 1000)
        return
    failed = {tp.partition for tp, error in (results or {}).items() if error is not None}
    ok = [r for r in polled if r[0] not in failed]
    bad = [r for r in polled if r[0] in failed]
    if ok:
        emit(event="acked", records=ok, ms=time.time() * 1000)
    if bad:
        emit(event="ack_failed", records=bad, ms=time.time() * 1000)


def main(bootstrap: str, group: str, topic: str, seconds: float, stop_file: Path) -> None:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    consumer = ShareConsumer(config)
    consumer.subscribe([topic])
    emit(event="subscribed")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stop_file.exists():
        try:
            messages = [m for m in consumer.poll(0.2) if m.error() is None]
        except KafkaException as exc:  # retriable trouble during a failover: poll again
            emit(event="poll_error", error=str(exc))
            continue
        polled = []
        for message in messages:
            raw = message.value()
            emit(event="record", partition=message.partition(), offset=message.offset(),
                 delivery=message.delivery_count(), value=raw.decode() if raw else None,
                 ms=time.time() * 1000)  # fmt: skip
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            polled.append((message.partition(), message.offset()))
        if polled:
            _confirm(consumer, polled)
    consumer.close()
    emit(event="closed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), Path(sys.argv[5]))
