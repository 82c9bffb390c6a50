"""A kafka-python consumer in its own process (protocol: see `common.py`)."""

from __future__ import annotations

import logging
import os
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import KafkaConnectionError
from kafka.structs import OffsetAndMetadata

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
    def on_partitions_revoked(self, revoked: Any) -> None:
        emit("revoked", partitions=partitions_json(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        emit("assigned", partitions=partitions_json(assigned))


def handle(consumer: KafkaConsumer, cmd: dict[str, Any]) -> None:
    if cmd["cmd"] == "commit":
        offsets = {
            TopicPartition(t, p): OffsetAndMetadata(offset, metadata, -1)
            for t, p, offset, metadata in cmd["offsets"]
        }
        consumer.commit(offsets)
        emit("done", id=cmd["id"])
    elif cmd["cmd"] == "committed":
        result = []
        for t, p in cmd["partitions"]:
            committed = consumer.committed(TopicPartition(t, p), metadata=True, timeout_ms=10_000)
            if committed is not None:
                result.append([t, p, committed.offset, committed.metadata])
        emit("done", id=cmd["id"], offsets=result)


def consume(consumer: KafkaConsumer) -> None:
    """One poll; with `consume`, report the records and commit the next offsets synchronously."""
    try:
        batches = consumer.poll(timeout_ms=2000)
    except KafkaConnectionError as exc:  # see poll_through_restarts
        logging.getLogger("kpy_consumer").warning("poll: %s (retriable, polling again)", exc)
        return
    positions = report_records(
        (tp.topic, tp.partition, r.offset, r.key) for tp, records in batches.items() for r in records
    )
    if not positions:
        return
    try:
        consumer.commit(
            {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in positions.items()}
        )
    except Exception as exc:  # CommitFailedError during a rebalance: reported, the test decides
        report_commit(positions, exc)
        return
    report_commit(positions, None)


def poll_through_restarts(consumer: KafkaConsumer) -> None:
    """kafka-python 3.0.12 lets a KafkaConnectionError out of poll() when the coordinator lookup and
    the metadata refresh it falls back to both meet a server that is restarting
    (BaseCoordinator.ensure_coordinator_ready_async catches the first failure as an
    InvalidMetadataError, not the second): retriable, so poll again, as an application would
    (FINDINGS.md)."""
    try:
        consumer.poll(timeout_ms=2000)
    except KafkaConnectionError as exc:
        logging.getLogger("kpy_consumer").warning("poll: %s (retriable, polling again)", exc)


def main() -> None:
    # KCOORD_WORKER_LOG=DEBUG shows the client's own protocol trace when a scenario misbehaves.
    logging.basicConfig(level=os.environ.get("KCOORD_WORKER_LOG", "WARNING"))
    opts = Options.from_argv()
    consumer = KafkaConsumer(
        **opts.python_client_settings(),
        partition_assignment_strategy=[ASSIGNORS[opts.assignor]],
        reconnect_backoff_max_ms=500,
    )
    consumer.subscribe(opts.topics, listener=Listener())
    WorkerLoop().run(
        # Long enough for a whole JoinGroup+SyncGroup round: kafka-python 3.0.12 drops a join that
        # outlives the poll timeout when need_rejoin() has turned False meanwhile (FINDINGS.md).
        poll=(lambda: consume(consumer)) if opts.consume else (lambda: poll_through_restarts(consumer)),
        assignment=consumer.assignment,
        handle=lambda cmd: handle(consumer, cmd),
        close=consumer.close,
    )


if __name__ == "__main__":
    main()
