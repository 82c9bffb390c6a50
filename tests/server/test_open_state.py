"""`open_state(config, backends, services)`: one way to open the state, the backends saying where it lives.

The local backends (the data directory) are the real ones; a recording subclass shows the order the
steps run in (cluster mode's `ClusterBackends`, kcoord/cluster/backends.py, runs under the same order:
tests/cluster starts nodes on it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from kcoord.broker.markers import TxnMarkers
from kcoord.broker.timers import AsyncioTimers, SystemClock
from kcoord.broker.topics.data import TopicData
from kcoord.broker.topics.leadership import PartitionLeadership, SingleNodeLeadership
from kcoord.coordinator.groups.manager import GroupManager
from kcoord.coordinator.metadata import TopicRegistry
from kcoord.coordinator.metadata.producer_ids import ProducerIds
from kcoord.coordinator.runtime import Clock
from kcoord.storage.faults import FaultPolicy, StorageFault
from kcoord.wiring.app_state import State, close_state, open_state, stop_state
from kcoord.wiring.backends import CoordinatorLog, Coordinators, Recovered, Services
from kcoord.wiring.config import Config
from kcoord.wiring.local_backends import LocalBackends


def _fatal(fault: StorageFault) -> None:
    raise AssertionError(f"no storage fault expected: {fault}")


def _services() -> Services:
    return Services(SystemClock(), AsyncioTimers(asyncio.get_running_loop()), None, _fatal)


async def _closed(state: State) -> None:
    stop_state(state)
    await close_state(state)


class Recording(LocalBackends):
    """The data directory, noting each step `open_state` asks of it."""

    def __init__(self, config: Config) -> None:
        super().__init__(config, None)
        self.steps: list[str] = []
        self.writer: TxnMarkers | None = None

    async def coordinator_log(self) -> CoordinatorLog:
        self.steps.append("coordinator_log")
        return await super().coordinator_log()

    def producer_ids(self, record_log: CoordinatorLog) -> ProducerIds:
        self.steps.append("producer_ids")
        return super().producer_ids(record_log)

    async def recover(self, coordinators: Coordinators, policy: FaultPolicy) -> Recovered:
        self.steps.append("recover")
        return await super().recover(coordinators, policy)

    async def topic_data(self, topics: TopicRegistry, clock: Clock, policy: FaultPolicy) -> TopicData:
        self.steps.append("topic_data")
        return await super().topic_data(topics, clock, policy)

    def marker_writer(self, data: TopicData, manager: GroupManager, local: TxnMarkers) -> TxnMarkers:
        self.steps.append("marker_writer")
        self.writer = super().marker_writer(data, manager, local)
        return self.writer

    def leadership(self) -> PartitionLeadership:
        self.steps.append("leadership")
        return super().leadership()


async def test_open_state_asks_the_backends_in_startup_order(tmp_path: Path) -> None:
    config = Config(data_dir=tmp_path, fsync="never")
    backends = Recording(config)
    state = await open_state(config, backends, _services())
    try:
        assert backends.steps == [
            "coordinator_log",
            "producer_ids",
            "recover",
            "topic_data",
            "marker_writer",
            "leadership",
        ]
        assert backends.writer is state.markers  # the local writer: this node's partitions
        assert isinstance(state.leadership, SingleNodeLeadership) and state.leadership.node_id == 0
    finally:
        await _closed(state)


async def test_the_local_backends_recover_what_an_earlier_state_wrote(tmp_path: Path) -> None:
    config = Config(data_dir=tmp_path, fsync="always", node_id=3)
    first = await open_state(config, LocalBackends(config, None), _services())
    durable: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    first.topics.create([("orders", 2, {})], durable.set_result)
    assert await durable is None
    first.data.log("orders", 1)  # the partition log is created on first use
    await _closed(first)

    second = await open_state(config, LocalBackends(config, None), _services())
    try:
        recovered = second.topics.get("orders")
        assert recovered is not None and recovered.num_partitions == 2
        assert [(p.topic, p.partition) for p in second.data.logs.partitions()] == [("orders", 1)]
        assert second.leadership.leader("orders", 0) == 3
        assert (tmp_path / "topics").is_dir()
    finally:
        await _closed(second)
