"""An aiokafka consumer in its own process (protocol: see `common.py`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.structs import OffsetAndMetadata

from tests.integration.workers.common import Options, WorkerLoop, emit, partitions_json

ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


class Listener(ConsumerRebalanceListener):
    async def on_partitions_revoked(self, revoked: Any) -> None:
        emit("revoked", partitions=partitions_json(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        emit("assigned", partitions=partitions_json(assigned))


async def handle(consumer: AIOKafkaConsumer, cmd: dict[str, Any]) -> None:
    if cmd["cmd"] == "commit":
        offsets = {
            TopicPartition(t, p): OffsetAndMetadata(offset, metadata)
            for t, p, offset, metadata in cmd["offsets"]
        }
        await consumer.commit(offsets)
        emit("done", id=cmd["id"])
    elif cmd["cmd"] == "committed":
        tps = [TopicPartition(t, p) for t, p in cmd["partitions"]]
        # `consumer.committed()` drops the metadata string; the coordinator call returns both.
        committed = await asyncio.wait_for(consumer._coordinator.fetch_committed_offsets(tps), 10)
        result = [[tp.topic, tp.partition, oam.offset, oam.metadata] for tp, oam in sorted(committed.items())]
        emit("done", id=cmd["id"], offsets=[r for r in result if r[2] >= 0])


async def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    opts = Options.from_argv()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=opts.bootstrap,
        group_id=opts.group,
        client_id=opts.client_id,
        group_instance_id=opts.group_instance_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=opts.session_timeout_ms,
        heartbeat_interval_ms=opts.heartbeat_interval_ms,
        max_poll_interval_ms=opts.max_poll_interval_ms,
        rebalance_timeout_ms=opts.max_poll_interval_ms,
        metadata_max_age_ms=opts.metadata_max_age_ms,
        partition_assignment_strategy=(ASSIGNORS[opts.assignor],),
        retry_backoff_ms=100,
    )
    consumer.subscribe(opts.topics, listener=Listener())
    await consumer.start()
    loop = WorkerLoop()
    while not loop.closing:
        await consumer.getmany(timeout_ms=100)
        for cmd in loop.tick(consumer.assignment()):
            with loop.reporting(cmd):
                await handle(consumer, cmd)
    await consumer.stop()
    loop.closed()


if __name__ == "__main__":
    asyncio.run(main())
