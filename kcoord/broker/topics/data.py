"""TopicData: the registry's topics joined to their partition logs (the data plane).

The registry decides which topics and partitions exist; `partition_log` stores their records. A
partition's log is created when it is first needed (a new partition is an empty log at offset 0, so
nothing is lost by waiting), deleted with its topic, and retention runs every
`log.retention.check.interval.ms` (Kafka's default, 5 minutes). A partition directory whose topic is
no longer in the registry (the server stopped between the topic tombstone and the deletion of its
files) is removed at startup, before any client can see it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping

from kcoord.broker.topics.configs import partition_config
from kcoord.broker.topics.offsets_topic import OFFSETS_TOPIC, OffsetsTopic
from kcoord.coordinator.metadata.topic_registry import TopicRegistry
from kcoord.partition_log import PartitionConfig
from kcoord.partition_log.port import PartitionStore, PartitionStores
from kcoord.protocol.errors import ErrorCode
from kcoord.storage.faults import StorageFault

__all__ = ["RETENTION_CHECK_INTERVAL_MS", "TopicData"]

log = logging.getLogger("kcoord.topics")

RETENTION_CHECK_INTERVAL_MS = 300_000  # log.retention.check.interval.ms


class TopicData:
    """Partition logs of the registry's topics."""

    def __init__(
        self, registry: TopicRegistry, logs: PartitionStores, defaults: Mapping[str, str] | None = None
    ) -> None:
        self._registry = registry
        self.logs = logs
        self._defaults = defaults or {}  # the broker's topic-config defaults (Config.topic_defaults)
        self._retention: asyncio.TimerHandle | None = None
        # `__consumer_offsets`, the coordinator log's read-only view; None = not served (no such topic).
        self.offsets: OffsetsTopic | None = None

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    def partition_config(self, topic: str) -> PartitionConfig:
        """The topic's configs as the partition log takes them (Kafka's defaults for what is not set)."""
        record = self._registry.get(topic)
        return partition_config(record.config_map() if record is not None else {}, self._defaults)

    def min_insync_replicas(self, topic: str) -> int:
        record = self._registry.get(topic)
        for name, value in record.configs if record is not None else ():
            if name == "min.insync.replicas":
                return int(value)
        return 1

    def reconfigure(self, topic: str) -> None:
        """The topic's configs changed (AlterConfigs): its open partition logs take the new ones."""
        config = self.partition_config(topic)
        for partition in self.logs.partitions():
            if partition.topic == topic:
                partition.config = config

    def log(self, topic: str, partition: int) -> PartitionStore | None:
        """The partition's log; None if the registry has no such partition or this node does not lead it
        (`missing` says which)."""
        if topic == OFFSETS_TOPIC and self.offsets is not None:
            return self.offsets.partition(partition) if self.offsets.exists else None
        existing = self.logs.get(topic, partition)
        if existing is not None:
            return existing if self._registry.has_partition(topic, partition) else None
        if not self._registry.has_partition(topic, partition) or self._registry.is_pending(topic):
            return None
        return self.logs.ensure(topic, partition, self.partition_config(topic))

    def missing(self, topic: str, partition: int) -> ErrorCode:
        """Why `log` answered None: the partition does not exist (or its topic is still being
        created), or it exists and another node leads it (cluster mode), which Kafka answers
        NOT_LEADER_OR_FOLLOWER so the client refreshes its metadata and follows the leader
        (ReplicaManager.getPartitionOrException: known in the metadata but not online here)."""
        if topic == OFFSETS_TOPIC and self.offsets is not None:  # a shard another node owns (cluster mode)
            in_range = self.offsets.exists and 0 <= partition < self.offsets.num_partitions
            return ErrorCode.NOT_LEADER_OR_FOLLOWER if in_range else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not self._registry.has_partition(topic, partition) or self._registry.is_pending(topic):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def read_failed(self, fault: StorageFault) -> None:
        """A read of a partition log failed; the caller answers KAFKA_STORAGE_ERROR for it. EIO is
        the medium: fatal through the process's fault policy (exit 75), as Kafka takes the log
        directory offline (`LogDirFailureChannel`) and halts with its only one gone."""
        if fault.fatal:
            self.logs.policy.failed(fault)
        else:
            log.warning("partition log read failed: %s", fault)

    async def remove_orphans(self) -> None:
        """Startup: delete partition logs of topics the registry no longer has; give the others their
        topic's configs (the logs were opened before the registry was replayed)."""
        orphans = {p.topic for p in self.logs.partitions() if self._registry.get(p.topic) is None}
        for topic in sorted(orphans):
            log.warning("deleting partition logs of topic=%s: the topic was deleted", topic)
            await self.logs.delete_topic(topic)
        for plog in self.logs.partitions():
            plog.config = self.partition_config(plog.topic)

    async def delete(self, topics: Iterable[str]) -> None:
        for topic in topics:
            await self.logs.delete_topic(topic)

    def start_retention(self, loop: asyncio.AbstractEventLoop) -> None:
        self._retention = loop.call_later(RETENTION_CHECK_INTERVAL_MS / 1000, self._retain, loop)

    def _retain(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self.logs.enforce_retention()
        finally:
            self.start_retention(loop)

    async def close(self) -> None:
        if self._retention is not None:
            self._retention.cancel()
        await self.logs.close()

    async def discard(self) -> None:
        """Close the partition logs without fsync (the test controls' reset deletes them next)."""
        if self._retention is not None:
            self._retention.cancel()
        await self.logs.discard()

    def abandon(self) -> None:
        """A crash: the partition logs' files are closed as they are."""
        if self._retention is not None:
            self._retention.cancel()
        self.logs.abandon()

    def check_retention(self) -> None:
        """The periodic retention check, once now (the test controls' `advance()`)."""
        self.logs.enforce_retention()
