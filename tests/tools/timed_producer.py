"""Produce records with given timestamps, in its own process, with confluent-kafka:

    python -m tests.tools.timed_producer '{"bootstrap": B, "topic": T, "records": [[partition, ts_ms], ...]}'

Prints one JSON line per delivered record: [partition, offset, timestamp_ms]; exits non-zero on failure.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import Producer


def main() -> None:
    opts = json.loads(sys.argv[1])
    producer = Producer({"bootstrap.servers": opts["bootstrap"], "linger.ms": 0, "acks": "all"})
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            print(json.dumps([msg.partition(), msg.offset(), msg.timestamp()[1]]), flush=True)

    for partition, timestamp in opts["records"]:
        producer.produce(
            opts["topic"], value=b"v", partition=partition, timestamp=timestamp, on_delivery=delivered
        )
        producer.flush(30)  # one at a time: offsets follow the timestamps
    if failures:
        sys.exit(f"delivery failed: {failures[:3]}")


if __name__ == "__main__":
    main()
