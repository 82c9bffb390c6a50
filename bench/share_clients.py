"""The client side of bench.share_groups, each role in a process of its own (librdkafka 2.16):

    python -m bench.share_clients produce|share|member|ack_latency '<json options>'

`share` (a confluent-kafka `ShareConsumer`, implicit acknowledgement) and `member` (a consumer-group
member, confluent-kafka `Consumer`) print one JSON line per non-empty poll, {"n": records, "re": records
delivered before (delivery count > 1)}, and run until the file `stop` exists (or `bound_s`); the bench
process adds the lines up, so that each consumer costs the reading process no more than a count.
`ack_latency` acknowledges explicitly, one record at a time, and times acknowledge() + commit_sync():
the ShareAcknowledge round trip, answered once the acknowledgement is durable. `produce` writes
`records` records round robin over the partitions and prints the count acknowledged.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def produce(opts: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Producer

    # Batches as a Kafka producer makes them by default (batch.size 16 KiB, linger.ms 5): a share
    # partition acquires whole batches, so their size shapes what one ShareFetch hands out.
    producer = Producer({
        "bootstrap.servers": opts["bootstrap"], "acks": "all", "linger.ms": 5, "batch.size": 16_384,
        "queue.buffering.max.kbytes": 262_144, "compression.type": "none",
    })  # fmt: skip
    payload = os.urandom(opts["message_bytes"])
    acked = [0]

    def delivered(err: Any, msg: Any) -> None:
        acked[0] += err is None

    sent = 0
    while sent < opts["records"]:
        try:
            producer.produce(
                opts["topic"], value=payload, partition=sent % opts["partitions"], on_delivery=delivered
            )
            sent += 1
        except BufferError:
            producer.poll(0.005)
    producer.flush(120)
    return {"acked": acked[0]}


def _report(n: int, redelivered: int) -> None:
    print(json.dumps({"n": n, "re": redelivered}), flush=True)


def _until_stopped(opts: dict[str, Any], take: Callable[[], Iterable[Any]]) -> None:
    """Polls with `take` until the stop file exists or the bound passes; a line per non-empty poll."""
    deadline = time.monotonic() + opts.get("bound_s", 300)
    while not os.path.exists(opts["stop"]) and time.monotonic() < deadline:
        messages = [m for m in take() if m.error() is None]
        if messages:
            _report(len(messages), sum(1 for m in messages if (m.delivery_count() or 1) > 1))


def _await_go(opts: dict[str, Any]) -> None:
    """With a `go` file named: the group forms (librdkafka heartbeats from its own thread) while this
    waits for it, so that the timed read starts with every member assigned."""
    deadline = time.monotonic() + opts.get("bound_s", 300)
    while "go" in opts and not os.path.exists(opts["go"]) and time.monotonic() < deadline:
        time.sleep(0.01)  # a file written by another process: nothing to wait on but its existence


def share(opts: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({
        "bootstrap.servers": opts["bootstrap"], "group.id": opts["group"],
        "share.acknowledgement.mode": "implicit", **opts.get("client_config", {}),
    })  # fmt: skip
    consumer.subscribe([opts["topic"]])
    _await_go(opts)
    # implicit mode: each poll accepts what the previous poll returned (ShareAcknowledge piggy-backed
    # on the next ShareFetch), the default way a share consumer reads
    _until_stopped(opts, lambda: consumer.poll(0.1))
    consumer.close()
    return {"closed": True}


def member(opts: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Consumer

    consumer = Consumer({
        "bootstrap.servers": opts["bootstrap"], "group.id": opts["group"],
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })  # fmt: skip
    consumer.subscribe([opts["topic"]])
    _until_stopped(opts, lambda: consumer.consume(num_messages=500, timeout=0.1))
    consumer.close()
    return {"closed": True}


def ack_latency(opts: dict[str, Any]) -> dict[str, Any]:
    """Milliseconds from acknowledge(ACCEPT) of one record to commit_sync() returning its result."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({
        "bootstrap.servers": opts["bootstrap"], "group.id": opts["group"],
        "share.acknowledgement.mode": "explicit",
    })  # fmt: skip
    consumer.subscribe([opts["topic"]])
    latencies: list[float] = []
    deadline = time.monotonic() + opts.get("bound_s", 300)
    while len(latencies) < opts["samples"] and time.monotonic() < deadline:
        for message in consumer.poll(0.1):
            if message.error() is not None:
                continue
            started = time.perf_counter()
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync(30)
            latencies.append((time.perf_counter() - started) * 1000)
    consumer.close()
    return {"latencies_ms": latencies}


ROLES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "produce": produce, "share": share, "member": member, "ack_latency": ack_latency,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    role, options = list(sys.argv[1:] if argv is None else argv)
    print(json.dumps(ROLES[role](json.loads(options))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
