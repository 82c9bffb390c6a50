"""The data plane across server crashes, with real producers in their own processes.

* An idempotent producer (librdkafka `enable.idempotence=true`, aiokafka's) keeps producing while
  the server is SIGKILLed and restarted: every message is stored exactly once, and the producer
  carries on by itself.
* A server SIGKILLed again and again under an acks=all load: after each restart every acknowledged
  message is fetchable at the offset it was acknowledged with, and offsets stay dense.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect

pytestmark = [pytest.mark.integration, pytest.mark.server_args("--fsync", "always")]

Stored = dict[int, dict[int, bytes]]  # partition -> offset -> value


def read_partition(server: KcoordServer, topic: str, partition: int) -> dict[int, bytes]:
    """Every record of one partition, through raw Fetch requests and kafka-python's batch reader."""
    from kafka.record.memory_records import MemoryRecords

    out: dict[int, bytes] = {}
    with connect(server.address) as sock:
        offset = 0
        while True:
            body = {
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 22,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 22}
                        ],
                    }
                ],
                "forgotten_topics_data": [],
            }
            part = call(sock, 1, 12, body)["responses"][0]["partitions"][0]
            assert part["error_code"] == ErrorCode.NONE, part
            records = MemoryRecords(part["records"])
            if not part["records"]:
                return out
            while (batch := records.next_batch()) is not None:
                for record in batch:
                    out[record.offset] = record.value
                    offset = record.offset + 1


def read_topic(server: KcoordServer, topic: str, partitions: int) -> Stored:
    return {p: read_partition(server, topic, p) for p in range(partitions)}


def check_dense(stored: Stored) -> None:
    for partition, records in stored.items():
        assert sorted(records) == list(range(len(records))), f"partition {partition}: offsets not dense"


@pytest.mark.parametrize("client", ["confluent-kafka", "aiokafka"])
def test_idempotent_producer_across_a_server_kill(
    client: str, server: KcoordServer, producers: Any, topic: str
) -> None:
    count = 3000
    producer = producers.spawn(client, topic, count, keys=30, idempotent=True, rate=1000)
    producer.wait_acked(600, 60)
    server.kill()
    server.start()
    producer.wait_acked(1500, 60)
    server.kill()
    server.start()
    acked = producer.wait_finished(180)
    assert not producer.failures, producer.failures[:3]
    assert len(acked) == count
    stored = read_topic(server, topic, 6)
    check_dense(stored)
    values = Counter(v for records in stored.values() for v in records.values())
    assert set(values) == {str(i).encode() for i in range(count)}, "a message was lost"
    assert max(values.values()) == 1, f"duplicated: {[v for v, n in values.items() if n > 1][:10]}"
    for partition, offset, _, value in acked:
        assert stored[partition][offset] == value.encode(), "acknowledged at another offset"


def test_acknowledged_records_survive_repeated_kills(
    server: KcoordServer, producers: Any, topic: str
) -> None:
    rounds, total = 20, 200_000
    producer = producers.spawn("confluent-kafka", topic, total, keys=30, rate=2000)
    rng = random.Random(20261124)
    for round_ in range(rounds):
        # Capped at what the producer sends: on a loaded machine the rounds may outlast its 100 s of
        # records, and the later kills then check recovery of a log that no longer grows.
        target = min(producer.acked_count() + rng.randint(20, 400), total)
        producer.wait_acked(target, 60)
        server.kill()
        acked = list(producer.acked)  # everything acknowledged before the crash
        server.start()
        stored = read_topic(server, topic, 6)
        check_dense(stored)
        for partition, offset, _, value in acked:
            found = stored[partition].get(offset)
            assert found == value.encode(), (
                f"round {round_}: acked {value} at {partition}/{offset}, found {found!r}"
            )
    # Still sending, or done with every record (a slow machine's rounds may outlast them); never failed.
    assert producer.proc.poll() in (None, 0), "the producer gave up"
    assert not producer.failures, producer.failures[:3]
