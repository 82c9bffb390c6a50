"""TopicRegistry: which topics exist and how many partitions each has.

This node is the only broker, so it leads every partition. A topic carries its own configs (those a
client set; the edge's `kcoord/broker/topics/configs.py` knows the defaults); the records live in
the partition logs (the edge's `kcoord/broker/topics/data.py`).

Writes go through the metadata tenant's runtime (`CoordinatorRuntime.run`): the records are appended
and reach memory only once durable, through `apply`, the path replay uses (Kafka's
ReplicationControlManager replays its own records the same way), so a topic a client has seen never
disappears after a crash. While a write for a name is in flight the name is *pending*: a second
create/delete/alter of it is refused instead of racing.

In a cluster, another node may hold the name already (it created the topic first, and this node has
not read that yet): the log refuses the write with `TopicExists` and writes nothing. The name then
stays pending until this node applies a record of it (the winner's topic, read from the cluster), so
meanwhile CreateTopics answers TOPIC_ALREADY_EXISTS and Metadata LEADER_NOT_AVAILABLE (retriable).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from kcoord.coordinator.metadata.topic_records import TopicRecord, TopicTombstone
from kcoord.coordinator.runtime import CoordinatorRuntime, RecordLog, Write

__all__ = ["MAX_TOPIC_NAME_LENGTH", "TopicExists", "TopicLog", "TopicRegistry", "validate_topic_name"]

log = logging.getLogger("kcoord.topics")

OnDone = Callable[[BaseException | None], None]
TopicChange = TopicRecord | TopicTombstone

# Kafka's org.apache.kafka.common.internals.Topic: legal characters and maximum length.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


class TopicExists(Exception):
    """The log refused topic records because another topic holds their names (cluster mode: another
    node created it first, or this node's copy is stale). Nothing of that append was written."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        super().__init__(f"topics held by another topic id: {sorted(self.names)}")


TopicLog = RecordLog[TopicChange]
"""The part of the durable log the registry writes to (wired to storage by coordinator.persistence)."""


def validate_topic_name(name: str | None) -> str | None:
    """None if `name` is a legal topic name, else Kafka's reason (InvalidTopicException message): Kafka
    4's Topic.validate(String), "Topic name is invalid: " + Topic.detectInvalidTopic(name)."""
    reason = _invalid_topic_reason(name or "")
    return None if reason is None else f"Topic name is invalid: {reason}"


def _invalid_topic_reason(name: str) -> str | None:
    """Kafka's Topic.detectInvalidTopic, in its order and words."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    if not _LEGAL.fullmatch(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


class TopicRegistry:
    """Durable topics. `apply` is the only place that changes memory (replay and live writes)."""

    def __init__(self, topic_log: TopicLog) -> None:
        self.runtime: CoordinatorRuntime[TopicChange] = CoordinatorRuntime(topic_log)
        self.runtime.apply = self.apply
        self._topics: dict[str, TopicRecord] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._pending: set[str] = set()
        self._contended: set[str] = set()  # refused as another topic's: pending until a record arrives
        self._applied_in_flight: set[str] = set()  # a record arrived while the name's write was pending
        self.version = 0
        """Counts applied changes: consumer groups re-check their subscribed topics when it moved
        (coordinator.groups.consumer.topics.TopicView)."""

    # -- reads ------------------------------------------------------------------------------
    def get(self, name: str) -> TopicRecord | None:
        return self._topics.get(name)

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    name_of = name_for_id

    def describe(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count), or None: what a consumer group's assignor needs."""
        topic = self._topics.get(name)
        return None if topic is None else (topic.topic_id, topic.num_partitions)

    def names(self) -> Iterable[str]:
        return self._topics.keys()

    def all(self) -> list[TopicRecord]:
        return [self._topics[name] for name in sorted(self._topics)]

    def has_partition(self, name: str, partition: int) -> bool:
        topic = self._topics.get(name)
        return topic is not None and 0 <= partition < topic.num_partitions

    def is_pending(self, name: str) -> bool:
        """A create/delete/alter of `name` is being written, or was refused as another topic's whose
        record this node has not read yet."""
        return name in self._pending or name in self._contended

    # -- replay / apply ------------------------------------------------------------------------
    def apply(self, record: TopicChange) -> None:
        """Replay, and each durable write (the runtime's apply)."""
        self.version += 1
        self._contended.discard(record.name)
        if record.name in self._pending:
            self._applied_in_flight.add(record.name)
        if isinstance(record, TopicRecord):
            old = self._topics.get(record.name)
            if old is not None and old.topic_id != record.topic_id:
                self._by_id.pop(old.topic_id, None)
            self._topics[record.name] = record
            self._by_id[record.topic_id] = record.name
        else:
            removed = self._topics.pop(record.name, None)
            if removed is not None:
                self._by_id.pop(removed.topic_id, None)

    # -- writes ----------------------------------------------------------------------------------
    def create(
        self,
        specs: Iterable[tuple[str, int, Mapping[str, str]]],
        on_done: OnDone,
        replication: Mapping[str, int] | None = None,
    ) -> list[TopicRecord]:
        """Write new topics (name, partitions, configs), each with its replication factor from
        `replication` (1 for a name not there); callers validated names, counts, factors, configs and
        absence."""
        factors = replication or {}
        records = [
            TopicRecord(name, uuid.uuid4(), count, tuple(sorted(configs.items())), factors.get(name, 1))
            for name, count, configs in specs
        ]
        self._create(records, frozenset(), on_done)
        return records

    def _create(self, records: list[TopicRecord], refused: frozenset[str], on_done: OnDone) -> None:
        """Write `records`; those refused as another topic's are left out and the rest written again
        (each round shrinks: bounded), as Kafka creates the other topics of a request. `on_done`
        gets `TopicExists` with every refused name (the others were created), or the error."""

        def done(error: BaseException | None) -> None:
            if isinstance(error, TopicExists):
                rest = [r for r in records if r.name not in error.names]
                refused_now = refused | error.names
                if rest and len(rest) < len(records):
                    self._create(rest, refused_now, on_done)
                    return
                error = TopicExists(refused_now)
            elif error is None and refused:
                error = TopicExists(refused)
            on_done(error)

        self._write(records, done)

    def delete(self, names: Iterable[str], on_done: OnDone) -> None:
        self._write([TopicTombstone(name) for name in names], on_done)

    def set_partition_count(self, changes: Iterable[tuple[str, int]], on_done: OnDone) -> None:
        """CreatePartitions: grow existing topics (callers checked that each count grows)."""
        self._write([replace(self._topics[n], num_partitions=count) for n, count in changes], on_done)

    def set_configs(self, changes: Iterable[tuple[str, Mapping[str, str]]], on_done: OnDone) -> None:
        """AlterConfigs / IncrementalAlterConfigs: each topic's complete new set of own configs."""
        self._write([replace(self._topics[n], configs=tuple(sorted(c.items()))) for n, c in changes], on_done)

    def _write(self, records: Sequence[TopicChange], on_done: OnDone) -> None:
        """Through the runtime: the names are pending until the append settles; once durable the
        records are applied (by the runtime, through `apply`) before `answer` runs."""
        if not records:
            on_done(None)
            return
        names = [r.name for r in records]
        self._pending.update(names)

        def answer(error: BaseException | None) -> None:
            self._pending.difference_update(names)
            caught_up = self._applied_in_flight.intersection(names)
            self._applied_in_flight.difference_update(names)
            if error is None:
                for record in records:
                    log.info("topic %s", _describe(record))
            elif isinstance(error, TopicExists):
                log.info("topics %s are another topic's: waiting for its record", sorted(error.names))
                self._contended.update(error.names - caught_up)
            else:
                log.error("topic write failed, nothing applied: %s (%s)", names, error)
            on_done(error)

        self.runtime.run(Write(records, answer))


def _describe(record: TopicChange) -> str:
    if isinstance(record, TopicRecord):
        return f"name={record.name} partitions={record.num_partitions} topic_id={record.topic_id}"
    return f"name={record.name} deleted"
