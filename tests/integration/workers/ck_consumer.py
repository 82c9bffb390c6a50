"""A confluent-kafka (librdkafka) consumer in its own process (protocol: see `common.py`)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.integration.workers.common import (
    Options,
    WorkerLoop,
    emit,
    partitions_json,
    report_commit,
    report_records,
)


def handle(consumer: Consumer, cmd: dict[str, Any]) -> None:
    if cmd["cmd"] == "commit":
        offsets = [
            TopicPartition(t, p, offset, metadata=metadata) for t, p, offset, metadata in cmd["offsets"]
        ]
        results = consumer.commit(offsets=offsets, asynchronous=False)
        errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in results or () if tp.error]
        if errors:
            raise RuntimeError("; ".join(errors))
        emit("done", id=cmd["id"])
    elif cmd["cmd"] == "committed":
        tps = [TopicPartition(t, p) for t, p in cmd["partitions"]]
        result = [
            [tp.topic, tp.partition, tp.offset, tp.metadata or ""]
            for tp in consumer.committed(tps, timeout=10)
            if tp.offset >= 0
        ]
        emit("done", id=cmd["id"], offsets=result)


def consume(consumer: Consumer) -> None:
    """One poll; with `consume`, report the records and commit the next offsets synchronously."""
    messages = [m for m in consumer.consume(num_messages=500, timeout=0.1) if m.error() is None]
    positions = report_records((m.topic(), m.partition(), m.offset(), m.key()) for m in messages)
    if not positions:
        return
    offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
    try:
        results = consumer.commit(offsets=offsets, asynchronous=False)
        errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in results or () if tp.error]
        if errors:
            raise RuntimeError("; ".join(errors))
    except (KafkaException, RuntimeError) as exc:
        report_commit(positions, exc)
        return
    report_commit(positions, None)


def main() -> None:
    opts = Options.from_argv()
    conf: dict[str, Any] = {
        "bootstrap.servers": opts.bootstrap,
        "group.id": opts.group,
        "client.id": opts.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "max.poll.interval.ms": opts.max_poll_interval_ms,
        "topic.metadata.refresh.interval.ms": opts.metadata_max_age_ms,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 500,
    }
    if opts.group_protocol == "consumer":
        # KIP-848: the coordinator assigns and sets the session and heartbeat timing; librdkafka
        # refuses the classic protocol's settings for them.
        conf["group.protocol"] = "consumer"
        if opts.remote_assignor is not None:
            conf["group.remote.assignor"] = opts.remote_assignor
    else:
        conf["session.timeout.ms"] = opts.session_timeout_ms
        conf["heartbeat.interval.ms"] = opts.heartbeat_interval_ms
        conf["partition.assignment.strategy"] = opts.assignor
    if opts.group_instance_id is not None:
        conf["group.instance.id"] = opts.group_instance_id
    consumer = Consumer(conf)
    consumer.subscribe(
        opts.topics,
        on_assign=lambda _c, tps: emit("assigned", partitions=partitions_json(tps)),
        on_revoke=lambda _c, tps: emit("revoked", partitions=partitions_json(tps)),
        on_lost=lambda _c, tps: emit("lost", partitions=partitions_json(tps)),
    )
    WorkerLoop().run(
        poll=(lambda: consume(consumer)) if opts.consume else (lambda: consumer.poll(0.1)),
        assignment=consumer.assignment,
        handle=lambda cmd: handle(consumer, cmd),
        close=consumer.close,
    )


if __name__ == "__main__":
    main()
