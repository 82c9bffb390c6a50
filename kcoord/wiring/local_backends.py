"""`StateBackends` in the data directory (a single node, the default): the coordinator log is a
`storage.Log` in DATA_DIR, the partition logs live under DATA_DIR/topics, producer-id blocks are
records of the coordinator log and this node leads every partition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kcoord import storage
from kcoord.broker.markers import TxnMarkers
from kcoord.broker.timers import SystemClock
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership, SingleNodeLeadership
from kcoord.broker.topics.offsets_topic import OffsetsTopic, load_from_log, topic_ids_of
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.persistence import StorageRecordLog
from kcoord.coordinator.persistence.offsets_topic_records import is_group_record
from kcoord.coordinator.runtime import Clock
from kcoord.partition_log import PartitionLogs
from kcoord.storage.faults import FaultPolicy
from kcoord.wiring.backends import CoordinatorLog, Coordinators, Recovered
from kcoord.wiring.config import Config
from kcoord.wiring.metrics import MetricsSource, TimedFileOps

__all__ = ["LocalBackends", "storage_config"]

# The partition logs' directory inside the data directory (kcoord/pipeline/topic_reader.py reads it too).
TOPICS_DIR = "topics"


def storage_config(config: Config) -> Any:
    """The storage settings the coordinator controls (`--fsync`, `--history-retention-*`)."""
    return storage.LogConfig(
        fsync_policy=config.fsync,
        history_retention_ms=config.history_retention_ms,
        history_retention_bytes=config.history_retention_bytes,
    )


class LocalBackends:
    """The data directory of `config`; `metrics` (with --http-listen) time the coordinator log's appends
    and fsyncs."""

    def __init__(self, config: Config, metrics: MetricsSource | None) -> None:
        self._config = config
        self._metrics = metrics
        self._record_log = StorageRecordLog()
        self._log: Any = None
        self._opened_at = 0  # the log's next position when it was opened (the view's floor)

    async def coordinator_log(self) -> CoordinatorLog:
        if self._metrics is not None:
            self._record_log.append_seconds = self._metrics.append_seconds
        return self._record_log

    def phases(self) -> None:
        """A single node serves every key: each coordinator keeps its one-shard table."""
        return None

    def share_log(self, record_log: CoordinatorLog, topics: TopicRegistry) -> CoordinatorLog:
        return record_log  # one node: a tenant of the coordinator log

    def producer_ids(self, record_log: CoordinatorLog) -> ProducerIds:
        return ProducerIds(record_log)

    async def recover(self, coordinators: Coordinators, policy: FaultPolicy) -> Recovered:
        """Open the log, replaying every record into the coordinators."""
        replayer = coordinators.replayer()
        ops = None if self._metrics is None else TimedFileOps(self._metrics.fsync_seconds)
        config = self._config
        log_ = await storage.Log.open(
            config.data_dir, storage_config(config), replayer.apply, ops=ops, policy=policy
        )
        self._record_log.attach(log_)
        self._log = log_
        self._opened_at = log_.next_lsn
        replayer.finish()
        return Recovered(log_, replayer.summary())

    async def topic_data(self, topics: TopicRegistry, clock: Clock, policy: FaultPolicy) -> TopicData:
        """The partition logs, with the logs of topics deleted while they were closed removed."""
        config = self._config
        partition_logs = await PartitionLogs.open(
            config.data_dir / TOPICS_DIR, fsync=config.fsync, now_ms=clock.now_ms, policy=policy
        )
        data = TopicData(topics, partition_logs, config.topic_defaults())
        if not isinstance(clock, SystemClock):  # the test controls' movable clock: records' times follow it
            data.now_ms = clock.now_ms  # type: ignore[method-assign]
        await data.remove_orphans()
        data.offsets = self._offsets_topic()
        data.offsets.topic_ids = topic_ids_of(topics)
        return data

    def _offsets_topic(self) -> OffsetsTopic:
        """`__consumer_offsets`: it exists once the log holds a group's record; it is built from the log
        when first read, then fed every durable write."""
        log_, floor, record_log = self._log, self._opened_at, self._record_log

        def load(view: OffsetsTopic) -> None:
            load_from_log(view, log_, floor)
            record_log.on_durable = view.on_durable

        exists = any(is_group_record(storage.Record(t, k, None)) for t, k in log_.keydir)
        view = OffsetsTopic(self._config.offsets_topic_num_partitions, loader=load, exists=exists)

        def notice(records: Sequence[storage.Record], lsns: Sequence[int]) -> None:
            if view.notice(records) and record_log.on_durable is notice:
                record_log.on_durable = None  # nothing more to watch for until the view is read

        # a reset's new state replaces the old view's listener either way
        record_log.on_durable = None if exists else notice
        return view

    def marker_writer(self, data: TopicData, manager: GroupManager, local: TxnMarkers) -> TxnMarkers:
        return local  # every partition is this node's

    def leadership(self) -> PartitionLeadership:
        return SingleNodeLeadership(self._config.node_id)
