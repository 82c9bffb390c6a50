"""A share-group coordinator over a fake clock, fake timers and an in-memory log."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection
from typing import Any

import pytest

from kcoord.coordinator.groups import GroupConfig, GroupManager
from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.share.heartbeat import ShareHeartbeatAnswer, ShareHeartbeatRequest
from kcoord.coordinator.persistence import from_storage, to_storage
from kcoord.coordinator.runtime.fake_time import FakeClock, FakeTimers
from tests.unit.fakes import MemoryRecordLog
from tests.unit.test_consumer_heartbeat import FakeTopics

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


class Listener:
    """The data side's port, recorded."""

    def __init__(self) -> None:
        self.left: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.topics_gone: list[set[uuid.UUID]] = []

    def member_left(self, group_id: str, member_id: str) -> None:
        self.left.append((group_id, member_id))

    def group_deleted(self, group_id: str) -> None:
        self.deleted.append(group_id)

    def topics_deleted(self, topic_ids: Collection[uuid.UUID]) -> None:
        self.topics_gone.append(set(topic_ids))


class Node:
    def __init__(self, log: MemoryRecordLog | None = None, **config: Any) -> None:
        self.clock = FakeClock()
        self.timers = FakeTimers(self.clock)
        self.log = log if log is not None else MemoryRecordLog()
        self.topics = FakeTopics()
        self.topics.set("t1", T1, 4)
        self.topics.set("t2", T2, 2)
        # Kafka recomputes a share group's target at most every share.assignment.interval.ms (1 s by
        # default); the logic tests recompute at every change unless they ask for the interval.
        self.config = GroupConfig(**{"share_assignment_interval_ms": 0, **config})
        self.mgr = GroupManager(self.config, self.clock, self.timers, self.log, topics=self.topics)
        self.listener = Listener()
        self.mgr.share.listener = self.listener

    def load(self) -> Node:
        self.mgr.on_loaded()
        return self

    def restart(self) -> Node:
        """A new node replaying this one's durable records through the storage codec (the same
        topics), as recovery does."""
        other = Node(**dataclasses.asdict(self.config))
        other.topics = self.topics
        other.mgr = GroupManager(other.config, other.clock, other.timers, other.log, topics=self.topics)
        other.mgr.share.listener = other.listener
        for record in self.log.records:
            other.mgr.apply(from_storage(to_storage(record)))  # type: ignore[arg-type]
            other.log.records.append(record)
        return other.load()

    def hb(
        self, member_id: str, epoch: int, topics: tuple[str, ...] | None = None, group: str = "g", **kw: Any
    ) -> ShareHeartbeatAnswer:
        answers: list[ShareHeartbeatAnswer] = []
        request = ShareHeartbeatRequest(group, member_id, epoch, subscribed_topic_names=topics, **kw)
        self.mgr.share.heartbeat(request, answers.append)
        assert len(answers) == 1, answers
        return answers[0]

    def epoch_of(self, member_id: str, group: str = "g") -> int:
        share_group = self.mgr.share.group(group)
        assert share_group is not None
        return share_group.members[member_id].member_epoch

    def join(self, member_id: str, *topics: str, group: str = "g") -> ShareHeartbeatAnswer:
        """A member's first heartbeat, then one at the epoch it got: Kafka assigns a partition only
        once its share state is initialized, which the first heartbeat of a new subscription starts."""
        first = self.hb(member_id, 0, topics, group=group)
        assert first.error is ErrorCode.NONE, first
        return self.hb(member_id, first.member_epoch, group=group)

    def sync(self, *member_ids: str, group: str = "g") -> None:
        """Each member heartbeats at its own epoch (takes its target)."""
        for member_id in member_ids:
            assert self.hb(member_id, self.epoch_of(member_id, group), group=group).error is ErrorCode.NONE


@pytest.fixture
def node() -> Node:
    return Node().load()
