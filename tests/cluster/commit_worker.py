"""A stock client that joins a group and commits increasing offsets, printing every acknowledged
commit: run as a subprocess by the cluster tests. One JSON line per event on stdout:
{"assigned": [...]}, {"acked": N, "t": unix time}, {"error": "..."}, finally {"committed": N}.

usage: python -m tests.cluster.commit_worker LIB PROTOCOL BOOTSTRAP TOPIC GROUP SECONDS
LIB: kafka-python | aiokafka | confluent; PROTOCOL: classic | consumer (confluent only).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

ASSIGN_TIMEOUT_S = 60


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def kafka_python(bootstrap: list[str], topic: str, group: str, seconds: float) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=6000, heartbeat_interval_ms=500, request_timeout_ms=5000,
        retry_backoff_ms=50, metadata_max_age_ms=1000,
    )  # fmt: skip
    deadline = time.monotonic() + ASSIGN_TIMEOUT_S
    while not consumer.assignment() and time.monotonic() < deadline:
        # Longer than a join round: kafka-python 3.0.12 drops a join that outlives its poll timeout
        # (tests/integration/FINDINGS.md), and the member then never heartbeats or commits.
        consumer.poll(timeout_ms=2000)
    parts = sorted(tp.partition for tp in consumer.assignment())
    emit(assigned=parts)
    tp = TopicPartition(topic, parts[0])
    end, offset = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        offset += 1
        try:
            consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
            emit(acked=offset, t=time.time())
        except Exception as exc:
            emit(error=repr(exc)[:200], t=time.time())
            time.sleep(0.05)
        consumer.poll(timeout_ms=0)
    emit(committed=_retry(lambda: consumer.committed(tp)))
    consumer.close()


def _retry(call: Any) -> Any:
    for _ in range(50):
        try:
            return call()
        except Exception:
            time.sleep(0.2)
    return None


def confluent(bootstrap: list[str], topic: str, group: str, protocol: str, seconds: float) -> None:
    from confluent_kafka import Consumer, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": ",".join(bootstrap), "group.id": group, "enable.auto.commit": False,
        "group.protocol": protocol, "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 50,
    }  # fmt: skip
    if os.environ.get("KCOORD_RDKAFKA_DEBUG"):
        config["debug"] = os.environ["KCOORD_RDKAFKA_DEBUG"]
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer = Consumer(config)
    consumer.subscribe([topic])
    deadline = time.monotonic() + ASSIGN_TIMEOUT_S
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    parts = sorted(tp.partition for tp in consumer.assignment())
    emit(assigned=parts)
    end, offset = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        offset += 1
        try:
            consumer.commit(offsets=[TopicPartition(topic, parts[0], offset)], asynchronous=False)
            emit(acked=offset, t=time.time())
        except Exception as exc:
            emit(error=repr(exc)[:200], t=time.time())
            time.sleep(0.05)
        consumer.poll(0)
    got = _retry(lambda: consumer.committed([TopicPartition(topic, parts[0])], timeout=5))
    emit(committed=None if got is None else got[0].offset)
    consumer.close()


async def aiokafka(bootstrap: list[str], topic: str, group: str, seconds: float) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=6000, heartbeat_interval_ms=500, retry_backoff_ms=50, metadata_max_age_ms=1000,
    )  # fmt: skip
    await consumer.start()
    deadline = time.monotonic() + ASSIGN_TIMEOUT_S
    while not consumer.assignment() and time.monotonic() < deadline:
        await consumer.getmany(timeout_ms=100)
    parts = sorted(tp.partition for tp in consumer.assignment())
    emit(assigned=parts)
    tp = TopicPartition(topic, parts[0])
    end, offset = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        offset += 1
        try:
            await consumer.commit({tp: offset})
            emit(acked=offset, t=time.time())
        except Exception as exc:
            emit(error=repr(exc)[:200], t=time.time())
            await asyncio.sleep(0.05)
    emit(committed=await consumer.committed(tp))
    await consumer.stop()


def main(lib: str, protocol: str, bootstrap: str, topic: str, group: str, seconds: str) -> None:
    servers = bootstrap.split(",")
    if lib == "kafka-python":
        kafka_python(servers, topic, group, float(seconds))
    elif lib == "aiokafka":
        asyncio.run(aiokafka(servers, topic, group, float(seconds)))
    else:
        confluent(servers, topic, group, protocol, float(seconds))


if __name__ == "__main__":
    main(*sys.argv[1:7])
