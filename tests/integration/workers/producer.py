"""A producer of one client library in its own process.

    python -m tests.integration.workers.producer '<json options>'


Options: client (kafka-python | confluent-kafka | aiokafka), bootstrap, topic, count, keys (messages go
to key "k<i % keys>", value "<i>"), idempotent, compression (none|gzip|snappy|lz4|zstd), rate (messages
per second, 0 = as fast as the client goes), client_id.

It reports on stdout, one JSON object per line:

    {"event": "started"}
    {"event": "acked", "records": [[partition, offset, key, value], ...]}   # delivered, in batches
    {"event": "failed", "error": "...", "value": "..."}    # a message the client gave up on
    {"event": "finished", "acked": N, "failed": N}
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.integration.workers.common import emit

Ack = list[Any]


class Reporter:
    """Collects acknowledgements from the client's callbacks and emits them in batches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acked: list[Ack] = []
        self.acked = 0
        self.failed = 0

    def ack(self, partition: int, offset: int, key: str, value: str) -> None:
        with self._lock:
            self._acked.append([partition, offset, key, value])
            self.acked += 1

    def fail(self, error: object, value: str) -> None:
        with self._lock:
            self.failed += 1
        emit("failed", error=str(error), value=value)

    def flush(self) -> None:
        with self._lock:
            batch, self._acked = self._acked, []
        if batch:
            emit("acked", records=batch)

    def finish(self) -> None:
        self.flush()
        emit("finished", acked=self.acked, failed=self.failed)


def paced(opts: dict[str, Any], send: Callable[[str, str], None], tick: Callable[[], None]) -> None:
    """Calls send(key, value) for every message at the requested rate, `tick` in between."""
    started = time.monotonic()
    rate = float(opts.get("rate", 0))
    for i in range(int(opts["count"])):
        send(f"k{i % int(opts['keys'])}", str(i))
        if rate:
            delay = started + (i + 1) / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        if i % 100 == 99:
            tick()


def confluent(opts: dict[str, Any], reporter: Reporter) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": opts["bootstrap"],
            "client.id": opts["client_id"],
            "acks": "all",
            "enable.idempotence": bool(opts.get("idempotent", False)),
            "compression.type": opts.get("compression", "none"),
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 100,
        }
    )

    def delivered(err: Any, msg: Any) -> None:
        value = msg.value().decode()
        if err is not None:
            reporter.fail(err, value)
        else:
            reporter.ack(msg.partition(), msg.offset(), msg.key().decode(), value)

    def send(key: str, value: str) -> None:
        while True:
            try:
                producer.produce(opts["topic"], key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)

    def tick() -> None:
        producer.poll(0)
        reporter.flush()

    paced(opts, send, tick)
    while producer.flush(1.0):
        reporter.flush()


def kafka_python(opts: dict[str, Any], reporter: Reporter) -> None:
    from kafka import KafkaProducer

    compression = opts.get("compression", "none")
    producer = KafkaProducer(
        bootstrap_servers=opts["bootstrap"],
        client_id=opts["client_id"],
        acks="all",
        enable_idempotence=bool(opts.get("idempotent", False)),
        compression_type=None if compression == "none" else compression,
        linger_ms=5,
        retries=1_000_000,
        delivery_timeout_ms=120_000,
        reconnect_backoff_max_ms=500,
        retry_backoff_ms=100,
    )

    def send(key: str, value: str) -> None:
        future = producer.send(opts["topic"], key=key.encode(), value=value.encode())
        future.add_callback(lambda md: reporter.ack(md.partition, md.offset, key, value))
        future.add_errback(lambda exc: reporter.fail(exc, value))

    paced(opts, send, reporter.flush)
    producer.flush(120)
    producer.close(30)


def aiokafka(opts: dict[str, Any], reporter: Reporter) -> None:
    async def run() -> None:
        from aiokafka import AIOKafkaProducer

        compression = opts.get("compression", "none")
        producer = AIOKafkaProducer(
            bootstrap_servers=opts["bootstrap"],
            client_id=opts["client_id"],
            acks="all",
            enable_idempotence=bool(opts.get("idempotent", False)),
            compression_type=None if compression == "none" else compression,
            linger_ms=5,
            request_timeout_ms=30_000,
            retry_backoff_ms=100,
        )
        await producer.start()
        deliveries: list[asyncio.Future[Any]] = []

        def report(key: str, value: str) -> Callable[[asyncio.Future[Any]], None]:
            def done(delivery: asyncio.Future[Any]) -> None:
                if delivery.cancelled() or delivery.exception() is not None:
                    reporter.fail(delivery.exception() if not delivery.cancelled() else "cancelled", value)
                else:
                    reporter.ack(delivery.result().partition, delivery.result().offset, key, value)

            return done

        # One send after another on the producer's own loop: concurrent send() calls may overtake each
        # other while the first ones wait for metadata, which would reorder a key's messages.
        started, rate = time.monotonic(), float(opts.get("rate", 0))
        for i in range(int(opts["count"])):
            key, value = f"k{i % int(opts['keys'])}", str(i)
            delivery = await producer.send(opts["topic"], key=key.encode(), value=value.encode())
            delivery.add_done_callback(report(key, value))
            deliveries.append(delivery)
            delay = started + (i + 1) / rate - time.monotonic() if rate else 0
            await asyncio.sleep(max(delay, 0))
            if i % 100 == 99:
                reporter.flush()
        await asyncio.gather(*deliveries, return_exceptions=True)
        await producer.stop()

    asyncio.run(run())


CLIENTS = {"confluent-kafka": confluent, "kafka-python": kafka_python, "aiokafka": aiokafka}


def main() -> None:
    opts = json.loads(sys.argv[1])
    reporter = Reporter()
    emit("started")
    CLIENTS[opts["client"]](opts, reporter)
    reporter.finish()


if __name__ == "__main__":
    main()
