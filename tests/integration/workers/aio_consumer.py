"""An aiokafka consumer in its own process (protocol: see `common.py`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.structs import OffsetAndMetadata

from tests.integration.workers.common import (
    Options,
    WorkerLoop,
    emit,
    partitions_json,
    report_commit,
    report_records,
)

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


async def consume(consumer: AIOKafkaConsumer) -> None:
    """One poll; with `consume`, report the records and commit the next offsets."""
    batches = await consumer.getmany(timeout_ms=100)
    positions = report_records(
        (tp.topic, tp.partition, r.offset, r.key) for tp, records in batches.items() for r in records
    )
    if not positions:
        return
    try:
        await consumer.commit(
            {TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in positions.items()}
        )
    except Exception as exc:  # CommitFailedError during a rebalance: reported, the test decides
        report_commit(positions, exc)
        return
    report_commit(positions, None)


async def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    opts = Options.from_argv()
    consumer = AIOKafkaConsumer(
        **opts.python_client_settings(),
        rebalance_timeout_ms=opts.max_poll_interval_ms,
        partition_assignment_strategy=(ASSIGNORS[opts.assignor],),
    )
    consumer.subscribe(opts.topics, listener=Listener())
    await consumer.start()
    await WorkerLoop().run_async(
        poll=(lambda: consume(consumer)) if opts.consume else (lambda: consumer.getmany(timeout_ms=100)),
        assignment=consumer.assignment,
        handle=lambda cmd: handle(consumer, cmd),
        close=consumer.stop,
    )


if __name__ == "__main__":
    asyncio.run(main())
